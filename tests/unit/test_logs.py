"""The JSON log format, and ``configure_logging`` as runworkers uses it."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from typing import TextIO

import pytest

from django_sqlqueue.logs import JsonFormatter, configure_logging, logging_restored


def record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("django_sqlqueue.runner.execution", logging.INFO, __file__, 1, message, args, None)
    made.__dict__.update(extra)
    made.created = 1_700_000_000.5
    return made


def test_a_record_is_one_line_of_json_with_its_extras() -> None:
    line = JsonFormatter().format(record("Job %s done", 7, job_id=7, task="shop.send", duration=0.25, when=object))
    assert "\n" not in line
    assert json.loads(line) == {
        "timestamp": "2023-11-14T22:13:20.500+00:00",
        "level": "INFO",
        "logger": "django_sqlqueue.runner.execution",
        "message": "Job 7 done",
        "job_id": 7,
        "task": "shop.send",
        "duration": 0.25,
        "when": str(object),
    }


def test_an_exception_s_traceback_is_a_field() -> None:
    try:
        raise ValueError("boom\non two lines")
    except ValueError:
        failed = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    line = JsonFormatter().format(failed)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["exception"].startswith("Traceback (most recent call last):")
    assert entry["exception"].endswith("ValueError: boom\non two lines")


@pytest.fixture
def console() -> Iterator[logging.StreamHandler[TextIO]]:
    """A handler on the root logger that writes to stderr; logging is put back after."""
    handler = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    with logging_restored():
        root.addHandler(handler)
        try:
            yield handler
        finally:
            root.removeHandler(handler)


def test_json_puts_the_formatter_on_console_handlers_only(
    console: logging.StreamHandler[TextIO], tmp_path: object
) -> None:
    to_file = logging.FileHandler(f"{tmp_path}/log.txt", delay=True)
    logging.getLogger("django_sqlqueue.test").addHandler(to_file)
    try:
        configure_logging("json", logging.INFO)
    finally:
        logging.getLogger("django_sqlqueue.test").removeHandler(to_file)
    assert isinstance(console.formatter, JsonFormatter)
    assert not isinstance(to_file.formatter, JsonFormatter)
    assert logging.getLogger("django_sqlqueue").level == logging.INFO


def test_text_keeps_the_handlers_as_they_are(console: logging.StreamHandler[TextIO]) -> None:
    configure_logging("text", logging.DEBUG)
    assert console.formatter is None
    assert logging.getLogger("django_sqlqueue").level == logging.DEBUG


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="The log format must be one of text, json, not 'xml'"):
        configure_logging("xml", logging.INFO)


@pytest.mark.parametrize(("log_format", "formatter"), [("json", JsonFormatter), ("text", logging.Formatter)])
def test_a_stderr_handler_is_added_when_none_would_show_the_app_s_records(
    log_format: str, formatter: type[logging.Formatter], console: logging.StreamHandler[TextIO]
) -> None:
    ours = logging.getLogger("django_sqlqueue")
    ours.handlers, ours.propagate = [], False
    try:
        configure_logging(log_format, logging.INFO)
        (added,) = ours.handlers
    finally:
        ours.propagate = True
    assert isinstance(added, logging.StreamHandler)
    assert added.stream is sys.stderr
    assert type(added.formatter) is formatter


def test_logging_is_put_back_after_the_block(console: logging.StreamHandler[TextIO]) -> None:
    ours = logging.getLogger("django_sqlqueue")
    ours.setLevel(logging.WARNING)
    ours.handlers, ours.propagate = [], False  # so that configure_logging adds a handler
    try:
        with logging_restored():
            configure_logging("json", logging.DEBUG)
            assert isinstance(console.formatter, JsonFormatter)
            assert ours.level == logging.DEBUG
            assert len(ours.handlers) == 1
    finally:
        ours.propagate = True
    assert console.formatter is None
    assert ours.level == logging.WARNING
    assert ours.handlers == []
