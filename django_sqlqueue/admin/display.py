"""How the admin shows a job's parts. Everything read from the table (arguments,
results, error messages, tracebacks) is escaped by ``format_html``: a task's error
can carry any text, and the admin must not run it as HTML."""

from __future__ import annotations

import contextlib
import datetime
import json
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from django_sqlqueue.db.far_times import readable
from django_sqlqueue.rules.lifecycle import JobStatus

if TYPE_CHECKING:
    from django_sqlqueue.models import Job

#: Background colours of the status badges: readable with white text, and not told
#: apart by colour alone (the label is always written).
STATUS_COLOURS: dict[str, str] = {
    JobStatus.READY: "#447e9b",
    JobStatus.RUNNING: "#b37700",
    JobStatus.SUCCESSFUL: "#2e7d32",
    JobStatus.FAILED: "#c62828",
    JobStatus.CANCELLED: "#666666",
}


def progress_bar(progress: dict[str, Any] | None) -> SafeString | str:
    """A task's last progress report as a bar with its message ("-" for none)."""
    if not isinstance(progress, dict) or not isinstance(progress.get("done"), (int, float)):
        return "-"
    done, total, message = progress["done"], progress.get("total"), str(progress.get("message") or "")
    if isinstance(total, (int, float)) and total > 0:
        return format_html(
            '<progress class="sqlqueue-progress" value="{}" max="{}"></progress> {}% {}',
            done,
            total,
            int(100 * min(done, total) / total),
            message,
        )
    return format_html('<span class="sqlqueue-progress">{} done</span> {}', done, message)


def status_badge(status: str) -> SafeString:
    """The status as a coloured label."""
    label = JobStatus(status).label if status in JobStatus.values else status
    return format_html(
        '<span class="sqlqueue-status" style="background:{};color:#fff;padding:1px 6px;border-radius:3px">{}</span>',
        STATUS_COLOURS.get(status, "#000"),
        label,
    )


def utf8(text: str) -> str:
    """``text`` as a page can carry it: a surrogate, which a row written before they were
    refused may hold (SQLite and JSON keep them, UTF-8 cannot), is shown as its escape."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def pretty_json(value: Any) -> SafeString:
    """A JSON value indented in a ``<pre>``."""
    return format_html("<pre>{}</pre>", utf8(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)))


def short_error(errors: list[dict[str, Any]]) -> str:
    """The last attempt's exception class and message on one short line; "" when none failed."""
    if not errors:
        return ""
    last = errors[-1]
    kind = str(last.get("exception_class_path", "")).rsplit(".", 1)[-1]
    return utf8(Truncator(f"{kind}: {last.get('message', '')}").chars(80))


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
                utf8(str(part))
                for part in (
                    error.get("attempt", "?"),
                    error.get("exception_class_path", ""),
                    error.get("message", ""),
                    error.get("worker", "") or "-",
                    error.get("started_at", "") or "-",
                    error.get("traceback", ""),
                )
            )
            for error in reversed(errors)
        ),
    )


def readable_run_at(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """``jobs`` with their ``run_at`` read as ``shown_run_at``, capped at the last time
    Python holds (``db/far_times.py``): a row an old version wrote past it is listed and
    shown instead of failing the whole page."""
    return jobs.defer("run_at").annotate(shown_run_at=readable("run_at", jobs.db))


def time(value: datetime.datetime) -> str:
    """``value`` as the admin shows a time, in the current time zone; in its own when
    the current one would carry it past the year 9999."""
    if timezone.is_aware(value):
        with contextlib.suppress(OverflowError):
            value = timezone.localtime(value)
    return formats.localize(value)


def duration(start: datetime.datetime | None, end: datetime.datetime | None) -> str:
    """``end - start`` in seconds to the millisecond, or "-" when either is unknown."""
    if start is None or end is None:
        return "-"
    return f"{(end - start).total_seconds():.3f} s"
