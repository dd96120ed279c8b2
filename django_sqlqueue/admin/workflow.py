"""A job's place in its workflow on its admin page: the jobs it waits for and the jobs
that wait on it, each a link with its status, a few at most."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from django_sqlqueue.admin import display

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from django_sqlqueue.models import JobDependency

#: The linked jobs a page lists; past them it says how many more.
SHOWN = 20


def linked_jobs(links: QuerySet[JobDependency], end: str) -> SafeString | str:
    """The ``end`` (``"parent"`` or ``"child"``) of each of ``links``: its id as a link to
    its page and its status, "deleted" for a job no longer there; "-" for none."""
    from django_sqlqueue.models import Job

    ids = list(links.values_list(f"{end}_id", flat=True)[: SHOWN + 1])
    if not ids:
        return "-"
    statuses = dict(Job.objects.filter(pk__in=ids[:SHOWN]).values_list("pk", "status"))
    items = format_html_join(
        ", ",
        "{}",
        ((_linked(pk, statuses.get(pk)),) for pk in ids[:SHOWN]),
    )
    if len(ids) > SHOWN:
        return format_html("{} and {} more", items, links.count() - SHOWN)
    return items


def _linked(pk: int, status: str | None) -> SafeString:
    if status is None:
        return format_html("#{} (deleted)", pk)
    url = reverse("admin:django_sqlqueue_job_change", args=[pk])
    return format_html('<a href="{}">#{}</a> {}', url, pk, display.status_badge(status))
