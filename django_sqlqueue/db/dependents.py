"""Bringing back what a failed job's end cancelled when a person retries that job: the
jobs ``cancel_dependent`` ended because of it, all the way down, made to wait for it
again (``retry_dependent``), in the transaction of its retry.

A cancelled job comes back only when nothing else still stops it: each job it waits
for is one of those retried (or brought back with them), or has not ended in failure.
One that another failed job stopped too would only be cancelled again, so it stays
as it is. Its links to the retried jobs become unsettled again, and ``waiting_for``
counts its unsettled links: the finishes of the retried jobs release it, as for any
waiting job."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import TYPE_CHECKING

from django.db import models

from django_sqlqueue.db.dependencies import chunks, link_rows, unsettled_here
from django_sqlqueue.db.lifecycle import allowed, written
from django_sqlqueue.rules.dependencies import BLOCKING
from django_sqlqueue.rules.lifecycle import RETRY_DEPENDENT, JobStatus

if TYPE_CHECKING:
    from django_sqlqueue.db.table import AbstractJob


def cancelled_dependents(model: type[AbstractJob], using: str, retried: Collection[int], *, lock: bool) -> set[int]:
    """The ids of the jobs that ``retry_dependent`` would bring back with ``retried`` (jobs
    being retried): those ``cancel_dependent`` ended below them that nothing else stops.
    With ``lock``, their rows are locked until the transaction ends."""
    jobs = model._base_manager.using(using)
    found: set[int] = set()
    frontier = set(retried)
    while frontier:
        children = {
            child
            for chunk in chunks(frontier)
            for child in link_rows(using).filter(parent_id__in=chunk).values_list("child_id", flat=True)
        }
        cancelled: set[int] = set()
        for chunk in chunks(children - found):
            rows = jobs.filter(pk__in=chunk).filter(allowed(RETRY_DEPENDENT)).order_by("pk")
            cancelled.update((rows.select_for_update() if lock else rows).values_list("pk", flat=True))
        found |= cancelled
        frontier = cancelled
    return _unstopped(jobs, using, set(retried), found)


def _unstopped(jobs: models.QuerySet[AbstractJob], using: str, retried: set[int], found: set[int]) -> set[int]:
    """``found``, less each job a job neither retried nor among ``found`` stops (ended
    in failure, or deleted), until none is left out: one left out stops those below it."""
    parents: dict[int, list[int]] = defaultdict(list)
    for chunk in chunks(found):
        for child, parent in link_rows(using).filter(child_id__in=chunk).values_list("child_id", "parent_id"):
            parents[child].append(parent)
    others = {parent for each in parents.values() for parent in each} - retried - found
    statuses: dict[int, str] = dict.fromkeys(others, "")  # "" for a deleted job
    for chunk in chunks(others):
        statuses.update(jobs.filter(pk__in=chunk).values_list("pk", "status"))
    while stopped := {
        child
        for child in found
        if any(
            parent not in retried and parent not in found and statuses[parent] in BLOCKING for parent in parents[child]
        )
    }:
        found -= stopped
        statuses.update(dict.fromkeys(stopped, JobStatus.CANCELLED))
    return found


def retry_dependents(model: type[AbstractJob], using: str, retried: Collection[int]) -> int:
    """Bring back (``retry_dependent``) what :func:`cancelled_dependents` finds below
    ``retried`` (jobs just made ``READY`` again in the caller's transaction): its links
    to them unsettled, ``WAITING`` for its unsettled links. How many came back."""
    found = cancelled_dependents(model, using, retried, lock=True)
    again = set(retried) | found
    for chunk in chunks(found):
        link_rows(using).filter(child_id__in=chunk, parent_id__in=again).update(settled=False)
    unsettled_here(using)
    counts: dict[int, list[int]] = defaultdict(list)
    for chunk in chunks(found):
        unsettled = link_rows(using).filter(child_id__in=chunk, settled=False).values("child_id")
        for child, count in unsettled.annotate(count=models.Count("pk")).values_list("child_id", "count"):
            counts[count].append(child)
    jobs = model._base_manager.using(using)
    back = 0
    for count, children in counts.items():
        for chunk in chunks(children):
            waiting = written(RETRY_DEPENDENT, waiting_for=count, finished_at=None)
            back += jobs.filter(pk__in=chunk).filter(allowed(RETRY_DEPENDENT)).update(**waiting)
    return back
