"""Logs for log pipelines: :class:`JsonFormatter` writes each record as one JSON object
on one line. ``runworkers --log-format json`` puts it on the console handlers of the
supervisor and of every worker process; use it in your own ``LOGGING`` as well:

.. code-block:: python

    LOGGING = {
        "version": 1,
        "formatters": {"json": {"()": "django_sqlqueue.logs.JsonFormatter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
        "root": {"handlers": ["console"], "level": "INFO"},
    }

Imports the standard library only: a spawned worker process sets its logging up with it."""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import sys
from collections.abc import Iterator
from typing import TextIO

#: ``--log-format``'s choices.
TEXT, JSON = "text", "json"
LOG_FORMATS = (TEXT, JSON)

#: The attributes every ``LogRecord`` has; any other one came from ``extra=`` and is written.
_STANDARD = {*vars(logging.LogRecord("", 0, "", 0, "", None, None)), "message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``timestamp`` (ISO 8601, UTC, to the millisecond),
    ``level``, ``logger``, ``message``, then the record's extras (a worker's finished
    attempt has ``job_id``, ``task``, ``queue``, ``attempt``, ``outcome`` and ``duration``
    in seconds), and ``exception`` with the traceback when there is one. A value JSON
    cannot hold is written as its ``str()``."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "timestamp": datetime.datetime.fromtimestamp(record.created, tz=datetime.timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update((key, value) for key, value in vars(record).items() if key not in _STANDARD)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str)


def configure_logging(log_format: str, level: int) -> None:
    """Set the ``django_sqlqueue`` logger to ``level``, and give it a handler on stderr
    when the project's ``LOGGING`` gives it none (Python's last resort would show its
    warnings only, not the INFO lines ``-v 2`` asks for). With ``json``, every handler
    that writes to the console (stderr or stdout) gets a :class:`JsonFormatter`,
    keeping the project's loggers and levels; ``text`` changes no formatter."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"The log format must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}.")
    ours = logging.getLogger("django_sqlqueue")
    ours.setLevel(level)
    if log_format == JSON:
        for handler in _console_handlers():
            handler.setFormatter(JsonFormatter())
    if not ours.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        # As the last resort writes them: the message alone.
        handler.setFormatter(JsonFormatter() if log_format == JSON else logging.Formatter("%(message)s"))
        ours.addHandler(handler)


@contextlib.contextmanager
def logging_restored() -> Iterator[None]:
    """Logging as it was before the block, after it: the app's logger's level and
    handlers, and every console handler's formatter (what :func:`configure_logging`
    changes).

    ``runworkers`` run in a process that goes on after it (``call_command`` from a test
    or a script) must not leave its ``-v`` level, its stderr handler or its JSON
    formatters behind on the project's loggers."""
    ours = logging.getLogger("django_sqlqueue")
    level, handlers = ours.level, list(ours.handlers)
    formatters = {handler: handler.formatter for handler in _console_handlers()}
    try:
        yield
    finally:
        ours.setLevel(level)
        ours.handlers = handlers
        for handler, formatter in formatters.items():
            handler.setFormatter(formatter)


def _console_handlers() -> list[logging.StreamHandler[TextIO]]:
    """The handlers of every logger that write to the console (stderr or stdout)."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    return [
        handler
        for logger in loggers
        for handler in getattr(logger, "handlers", [])
        if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stderr, sys.stdout)
    ]
