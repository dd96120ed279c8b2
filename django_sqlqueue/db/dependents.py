"""Bringing back what a failed job's end cancelled when a person retries that job: the
jobs ``cancel_dependent`` ended because of it, all the way down, made to wait for it
again (``retry_dependent``), in the transaction of its retry.

A cancelled job comes back only when nothing else still stops it: each job it waits
for is one of those retried (or brought back with them), or has not ended in failure
(a job deleted once it had finished, pruned or deleted on success, stops nothing).
One that another failed job stopped too would only be cancelled again, so it stays
as it is. Its links to the retried jobs become unsettled again, and ``waiting_for``
counts its unsettled links: the finishes of the retried jobs release it, as for any
waiting job."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import models, transaction

from django_sqlqueue.db.dependencies import chunks, link_rows, unsettled_here
from django_sqlqueue.db.keys import unique
from django_sqlqueue.db.lifecycle import allowed, written
from django_sqlqueue.rules.dependencies import BLOCKING, stopped_by
from django_sqlqueue.rules.lifecycle import ACTIVE, RETRY_DEPENDENT, JobStatus

if TYPE_CHECKING:
    from django_sqlqueue.db.schema.table import AbstractJob


def unfinished_parents(model: type[AbstractJob], using: str, retried: Collection[int]) -> dict[int, int]:
    """How many of the jobs each of ``retried`` (jobs an admin retries) was enqueued
    after have not finished, for those that some have not: its links still unsettled
    (a job cancelled while it waited; the finish of the job it waits for counts it
    down), and its settled links to jobs active again (retried since)."""
    counts: dict[int, int] = {}
    for chunk in chunks(retried):
        links = link_rows(using).filter(child_id__in=chunk).filter(models.Q(settled=False) | _to_active(model))
        counts.update(links.values("child_id").annotate(count=models.Count("pk")).values_list("child_id", "count"))
    return counts


def wait_again(model: type[AbstractJob], using: str, retried: Collection[int]) -> None:
    """Unsettle the links of ``retried`` (made ``WAITING`` again, after
    :func:`unfinished_parents`) to jobs active again, so that their finishes count them
    down. Without the parents' row locks (a finish holds its job's, then its children's:
    the other order would deadlock): a finish that looked for links just before misses
    its own, and the maintenance sweep settles it."""
    for chunk in chunks(retried):
        link_rows(using).filter(child_id__in=chunk, settled=True).filter(_to_active(model)).update(settled=False)
    unsettled_here(using)


def _to_active(model: type[AbstractJob]) -> models.Exists:
    """The links to an active job."""
    return models.Exists(model._base_manager.filter(pk=models.OuterRef("parent_id"), status__in=list(ACTIVE)))


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
    """``found``, less each job a job neither retried nor among ``found`` stops, until
    none is left out: one left out stops those below it. A job stops it when it ended
    in failure, or was deleted unfinished: its link still unsettled, or the job's
    cancellation names it. One deleted once it had finished (its link settled: pruned,
    or deleted on success) stops nothing."""
    parents: dict[int, list[tuple[int, bool]]] = defaultdict(list)
    for chunk in chunks(found):
        links = link_rows(using).filter(child_id__in=chunk).values_list("child_id", "parent_id", "settled")
        for child, parent, settled in links:
            parents[child].append((parent, settled))
    others = {parent for each in parents.values() for parent, _ in each} - retried - found
    statuses: dict[int, str] = dict.fromkeys(others, "")  # "" for a deleted job
    for chunk in chunks(others):
        statuses.update(jobs.filter(pk__in=chunk).values_list("pk", "status"))
    named = _stoppers(jobs, {child for child, each in parents.items() if any(statuses.get(p) == "" for p, _ in each)})

    def stops(child: int, parent: int, settled: bool) -> bool:
        if parent in retried or parent in found:
            return False
        if statuses[parent] == "":
            return not settled or named.get(child) == parent
        return statuses[parent] in BLOCKING

    while stopped := {child for child in found if any(stops(child, *link) for link in parents[child])}:
        found -= stopped
        statuses.update(dict.fromkeys(stopped, JobStatus.CANCELLED))
    return found


def _stoppers(jobs: models.QuerySet[AbstractJob], cancelled: set[int]) -> dict[int, int]:
    """The job each of ``cancelled`` was cancelled by, as its last error names it."""
    named = {}
    for chunk in chunks(cancelled):
        for pk, errors in jobs.filter(pk__in=chunk).values_list("pk", "errors"):
            if errors and (parent := stopped_by(str(errors[-1].get("message", "")))) is not None:
                named[pk] = parent
    return named


@dataclass
class Restored:
    """What :func:`retry_dependents` brought back, and what it left cancelled."""

    back: int = 0
    #: The jobs left cancelled because another active job holds their ``unique_key``
    #: by id: their keys.
    held: dict[int, str] = field(default_factory=dict)
    #: The jobs left cancelled below those, which would wait for them.
    below_held: int = 0


def retry_dependents(model: type[AbstractJob], using: str, retried: Collection[int]) -> Restored:
    """Bring back (``retry_dependent``) what :func:`cancelled_dependents` finds below
    ``retried`` (jobs just made active again in the caller's transaction): its links
    to them unsettled, ``WAITING`` for its unsettled links. Each job with a unique key
    is written in a savepoint of its own: one whose key another active job holds now
    stays cancelled, with the jobs below it that only it stopped, and the others come
    back."""
    retried = set(retried)
    jobs = model._base_manager.using(using)
    found = everyone = cancelled_dependents(model, using, retried, lock=True)
    keys: dict[int, str] = {}
    for chunk in chunks(found):
        rows = jobs.filter(pk__in=chunk, unique_key__isnull=False).values_list("pk", "unique_key")
        keys.update((pk, key) for pk, key in rows if key is not None)
    held: set[int] = set()
    while True:
        try:
            with transaction.atomic(using=using):
                if left := _bring_back(jobs, using, retried, found, keys):
                    raise _KeysHeld(left)
        except _KeysHeld as error:
            # Written again without them: what only they stopped stays cancelled too.
            held |= error.left
            found = _unstopped(jobs, using, retried, found - error.left)
        else:
            return Restored(len(found), {pk: keys[pk] for pk in sorted(held)}, len(everyone - found - held))


class _KeysHeld(Exception):
    """Rolls back a :func:`_bring_back` that left jobs out, to write it again without them."""

    def __init__(self, left: set[int]) -> None:
        super().__init__(sorted(left))
        self.left = left


def _bring_back(
    jobs: models.QuerySet[AbstractJob], using: str, retried: set[int], found: set[int], keys: dict[int, str]
) -> set[int]:
    """Write ``retry_dependent`` to ``found``; the ids of those with ``keys`` whose key
    another active job holds, left as they were."""
    again = retried | found
    for chunk in chunks(found):
        link_rows(using).filter(child_id__in=chunk, parent_id__in=again).update(settled=False)
    unsettled_here(using)
    counts: dict[int, list[int]] = defaultdict(list)
    for chunk in chunks(found):
        unsettled = link_rows(using).filter(child_id__in=chunk, settled=False).values("child_id")
        for child, count in unsettled.annotate(count=models.Count("pk")).values_list("child_id", "count"):
            counts[count].append(child)
    left: set[int] = set()
    for count, children in counts.items():
        for chunk in chunks(children):
            rows = jobs.filter(pk__in=chunk).filter(allowed(RETRY_DEPENDENT))
            waiting = written(RETRY_DEPENDENT, waiting_for=count, finished_at=None)
            left |= unique.update_each(rows, keys.keys() & set(chunk), using, **waiting)
    return left
