"""How the admin shows a job's parts. Everything read from the table (arguments,
results, error messages, tracebacks) is escaped by ``format_html``: a task's error
can carry any text, and the admin must not run it as HTML."""

from __future__ import annotations

import datetime
import json
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from django_sqlqueue.status import JobStatus

#: Background colours of the status badges: readable with white text, and not told
#: apart by colour alone (the label is always written).
STATUS_COLOURS: dict[str, str] = {
    JobStatus.READY: "#447e9b",
    JobStatus.RUNNING: "#b37700",
    JobStatus.SUCCESSFUL: "#2e7d32",
    JobStatus.FAILED: "#c62828",
    JobStatus.CANCELLED: "#666666",
}


def status_badge(status: str) -> SafeString:
    """The status as a coloured label."""
    label = JobStatus(status).label if status in JobStatus.values else status
    return format_html(
        '<span class="sqlqueue-status" style="background:{};color:#fff;padding:1px 6px;border-radius:3px">{}</span>',
        STATUS_COLOURS.get(status, "#000"),
        label,
    )


def pretty_json(value: Any) -> SafeString:
    """A JSON value indented in a ``<pre>``."""
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


def short_error(errors: list[dict[str, Any]]) -> str:
    """The last attempt's exception class and message on one short line; "" when none failed."""
    if not errors:
        return ""
    last = errors[-1]
    kind = str(last.get("exception_class_path", "")).rsplit(".", 1)[-1]
    return Truncator(f"{kind}: {last.get('message', '')}").chars(80)


def errors_html(errors: list[dict[str, Any]]) -> SafeString:
    """Every failed attempt, newest first: its exception, worker, start and traceback."""
    if not errors:
        return format_html("{}", "-")
    return format_html_join(
        "",
        '<div class="sqlqueue-error"><p><strong>Attempt {}</strong>: {}: {}<br>'
        '<span class="quiet">worker {}, started {}</span></p><pre>{}</pre></div>',
        (
            (
                error.get("attempt", "?"),
                error.get("exception_class_path", ""),
                error.get("message", ""),
                error.get("worker", "") or "-",
                error.get("started_at", "") or "-",
                error.get("traceback", ""),
            )
            for error in reversed(errors)
        ),
    )


def duration(start: datetime.datetime | None, end: datetime.datetime | None) -> str:
    """``end - start`` in seconds to the millisecond, or "-" when either is unknown."""
    if start is None or end is None:
        return "-"
    return f"{(end - start).total_seconds():.3f} s"
