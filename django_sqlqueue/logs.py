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

import datetime
import json
import logging
import sys

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
        loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
        for logger in loggers:
            for handler in getattr(logger, "handlers", []):
                if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stderr, sys.stdout):
                    handler.setFormatter(JsonFormatter())
    if not ours.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        # As the last resort writes them: the message alone.
        handler.setFormatter(JsonFormatter() if log_format == JSON else logging.Formatter("%(message)s"))
        ours.addHandler(handler)
