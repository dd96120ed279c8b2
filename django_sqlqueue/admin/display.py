"""How the admin shows a job's parts. Everything read from the table (arguments,
results, error messages, tracebacks) is escaped by ``format_html``: a task's error
can carry any text, and the admin must not run it as HTML."""

from __future__ import annotations

import contextlib
import datetime
import json
import re
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from django_sqlqueue.admin import times
from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.rules.lifecycle import JobStatus

if TYPE_CHECKING:
    from django_sqlqueue.models import Job

#: Background colours of the status badges: readable with white text, and not told
#: apart by colour alone (the label is always written).
STATUS_COLOURS: dict[str, str] = {
    JobStatus.WAITING: "#6a5acd",
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


def status_badge(status: str, reason: str | None = None) -> SafeString:
    """The status as a coloured label, with the job's ``end_reason`` when it has one."""
    label = JobStatus(status).label if status in JobStatus.values else status
    if reason:
        label = f"{label}: {reason}"
    return format_html(
        '<span class="sqlqueue-status" style="background:{};color:#fff;padding:1px 6px;border-radius:3px">{}</span>',
        STATUS_COLOURS.get(status, "#000"),
        label,
    )


#: The characters of an error message a list shows, and a table of failures; the rest is on hover.
ERROR_CHARS = 80
FOLDED_ERROR_CHARS = 200


def utf8(text: str) -> str:
    """``text`` as a page can carry it: a surrogate, which a row written before they were
    refused may hold (SQLite and JSON keep them, UTF-8 cannot), is shown as its escape."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def pretty_json(value: Any) -> SafeString:
    """A JSON value indented in a ``<pre>``."""
    return format_html("<pre>{}</pre>", utf8(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)))


def clipped(text: str, chars: int) -> SafeString:
    """``text`` cut to about ``chars`` characters in its middle, where the least is lost
    (a task path keeps its package and its function, an error its kind and its cause),
    the whole of it on hover. It breaks after a dot, a slash or an underscore, and
    anywhere else when it must, so no word of it widens the page."""
    text = utf8(text)
    if len(text) <= chars:
        return format_html('<span class="sqlqueue-long">{}</span>', _breakable(text))
    head = chars * 2 // 5
    tail = chars - head - 1
    return format_html(
        '<span class="sqlqueue-long" title="{}">{}…{}</span>', text, _breakable(text[:head]), _breakable(text[-tail:])
    )


def _breakable(text: str) -> SafeString:
    """``text`` escaped, with a line break opportunity after each dot, slash and underscore."""
    escaped = str(conditional_escape(text))  # entities hold none of those three
    return mark_safe(re.sub(r"([._/])", r"\1<wbr>", escaped))


def short_error(errors: list[dict[str, Any]]) -> SafeString | str:
    """The last attempt's exception class and message, cut to a few lines; "" when none failed."""
    if not errors:
        return ""
    last = errors[-1]
    kind = str(last.get("exception_class_path", "")).rsplit(".", 1)[-1]
    return clipped(f"{kind}: {last.get('message', '')}", ERROR_CHARS)


def errors_html(errors: list[dict[str, Any]], *, folded: bool = False) -> SafeString:
    """Every failed attempt, newest first: its exception, worker, start and traceback.
    ``folded`` (for a table of them): the message cut short, the traceback behind a click."""
    if not errors:
        return format_html("{}", "-")
    return format_html_join("", "{}", ((_error_html(error, folded=folded),) for error in reversed(errors)))


def _error_html(error: dict[str, Any], *, folded: bool) -> SafeString:
    text = {key: utf8(str(error.get(key) or "")) for key in ("exception_class_path", "message", "worker", "traceback")}
    message = f"{text['exception_class_path']}: {text['message']}"
    return format_html(
        '<div class="sqlqueue-error"><p><strong>Attempt {}</strong>: {}<br>'
        '<span class="quiet">worker {}, started {}</span></p>{}</div>',
        error.get("attempt", "?"),
        clipped(message, FOLDED_ERROR_CHARS) if folded else message,
        text["worker"] or "-",
        _started(error.get("started_at"), exact=not folded),
        format_html(
            "<details><summary>Traceback</summary><pre>{}</pre></details>" if folded else "<pre>{}</pre>",
            text["traceback"],
        ),
    )


def _started(value: Any, *, exact: bool) -> SafeString | str:
    """An attempt's start as recorded (ISO text), shown as every time is; as written if it is not one."""
    with contextlib.suppress(TypeError, ValueError):
        if (moment := parse_datetime(value)) is not None:
            return times.when(moment, exact=exact)
    return utf8(str(value or "-"))


def readable_run_at(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """``jobs`` with their ``run_at`` read as ``shown_run_at``, capped at the last time
    Python holds (the engine's ``readable``): a row an old version wrote past it is listed and
    shown instead of failing the whole page."""
    return jobs.defer("run_at").annotate(shown_run_at=engine_for(jobs.db).readable("run_at"))


def duration(start: datetime.datetime | None, end: datetime.datetime | None) -> str:
    """``end - start`` in seconds to the millisecond, or "-" when either is unknown."""
    if start is None or end is None:
        return "-"
    return f"{(end - start).total_seconds():.3f} s"
