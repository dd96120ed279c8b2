"""Concurrency limits, decided inside the claim's transaction: never more than a key's
limit of jobs with that key ``RUNNING`` at once, across every worker and host.

The count is of real ``RUNNING`` rows, taken under a lock on the key's row (or, on
SQLite, under the claim's write lock on the whole database), never a counter kept on
the side: a job rescued from a dead worker, fenced off or finished frees its slot by
leaving ``RUNNING``, so a slot can neither leak nor be released twice."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from django.apps import apps
from django.db import models
from django.db.models.functions import Coalesce

from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.rules.lifecycle import ACTIVE, JobStatus

if TYPE_CHECKING:
    from django_sqlqueue.db.schema.table import AbstractJob


class Candidate(Protocol):
    """What admission reads of a candidate: a :class:`Job`, or a row of these values."""

    pk: int
    concurrency_key: str | None
    concurrency_limit: int | None


C = TypeVar("C", bound=Candidate)
M = TypeVar("M", bound=models.Model)


def with_free_slot(model: type[AbstractJob], using: str) -> models.Q:
    """Jobs without a key, or whose key has a free slot by a plain read; every job
    until this process met a keyed candidate on ``using`` (the claim statement stays as
    it was before concurrency limits, for those who never use them).

    Left out of the candidates, the jobs of a saturated key cannot fill a batch and
    hold back the jobs behind them; :func:`admit` decides again under the lock, so
    correctness never depends on this condition. Unkeyed jobs pass on the ``IS NULL``
    alone: the count is only made for keyed ones."""
    if not keys_seen(using):
        return models.Q()
    running = (
        model._base_manager.filter(status=JobStatus.RUNNING, concurrency_key=models.OuterRef("concurrency_key"))
        .order_by()
        .annotate(held=models.Func(models.F("pk"), function="COUNT"))
        .values("held")
    )
    return models.Q(concurrency_key__isnull=True) | models.Q(
        concurrency_limit__gt=Coalesce(models.Subquery(running), 0)
    )


#: Databases on which this process met a keyed candidate. Until it has, its claims
#: leave nothing out (the statement stays as it was before concurrency limits); from
#: then on, saturated keys. One claim per process may so take keyed jobs it then drops.
#: Hidden state, kept here alone: it only makes the statement cheaper for those who never
#: use keys, never changes what a claim takes (``admit`` decides under the lock either
#: way; ``test_a_claim_takes_the_same_jobs_whether_or_not_this_process_has_met_a_key``).
_KEYS_SEEN: set[str] = set()


def keys_seen(using: str) -> bool:
    """Whether this process has met a keyed candidate on ``using`` (see :data:`_KEYS_SEEN`)."""
    return using in _KEYS_SEEN


def note_keys(using: str, found: bool) -> bool:
    """Whether this process has met keyed candidates on ``using``, now that a claim
    that took only keyless ones, fewer than it wanted, ``found`` (or not) keyed jobs
    among its candidates. From then on its claims admit keyed candidates under their
    limits (:func:`admit`)."""
    if found:
        _KEYS_SEEN.add(using)
    return keys_seen(using)


def admit(using: str, model: type[AbstractJob], candidates: Sequence[C]) -> list[C]:
    """The ``candidates`` (in claim order) that fit under their keys' limits now.

    Call it inside the claim's transaction, with the candidates locked: it locks the
    keys' rows in key order (so claimers never deadlock on them) and then counts each
    key's ``RUNNING`` jobs, which stay counted until this transaction commits. Without
    any keyed candidate it runs no query."""
    keys = sorted({job.concurrency_key for job in candidates if job.concurrency_key is not None})
    if not keys:
        return list(candidates)
    _KEYS_SEEN.add(using)
    claimer = engine_for(using)
    running = model._base_manager.using(using).filter(status=JobStatus.RUNNING, concurrency_key__in=keys)
    if not claimer.claim_holds_database:  # else the claim already is the only writer
        key_rows = apps.get_model("django_sqlqueue", "ConcurrencyKey")._base_manager.using(using)
        lock_rows(key_rows, keys, lambda key: key_rows.model(key=key))
    held = Counter(claimer.latest(running).values_list("concurrency_key", flat=True))
    admitted = []
    for job in candidates:
        key, limit = job.concurrency_key, job.concurrency_limit
        if key is not None:
            if held[key] >= (limit or 0):
                continue
            held[key] += 1
        admitted.append(job)
    return admitted


def lock_rows(rows: models.QuerySet[M], names: list[str], make: Callable[[str], M]) -> list[M]:
    """Lock the rows of ``names`` (sorted; the primary keys of ``rows``' model) in that
    order, creating with ``make`` those never seen before; return them.

    Existing rows are locked first, and only missing ones inserted: on MySQL/MariaDB
    ``INSERT IGNORE`` of an existing row takes a shared lock, which two claimers would
    then both try to upgrade. On SQLite, where the claim holds the write lock, the
    locks are no-ops."""
    locking = rows.select_for_update().order_by("pk")
    locked = list(locking.filter(pk__in=names))
    missing = sorted(set(names) - {row.pk for row in locked})
    if missing:
        rows.bulk_create([make(name) for name in missing], ignore_conflicts=True)
        locked = sorted([*locked, *locking.filter(pk__in=missing)], key=lambda row: row.pk)
    return locked


def forget_idle_keys(model: type[AbstractJob], using: str, limit: int) -> int:
    """Delete up to ``limit`` key rows that no ``READY`` or ``RUNNING`` job has (part of
    pruning, so that keys used once do not pile up); how many went.

    The rows hold no count, only a lock: a claim that finds its key's row gone creates
    it again (:func:`lock_rows`), and the ``DELETE`` checks again that no active job has
    the key, so a key taken since it was read stays. A claim that holds a row's lock
    makes the delete wait; either way the next claim counts the real ``RUNNING`` rows."""
    key_rows = apps.get_model("django_sqlqueue", "ConcurrencyKey")._base_manager.using(using)
    active = model._base_manager.using(using).filter(concurrency_key=models.OuterRef("pk"), status__in=list(ACTIVE))
    idle = key_rows.exclude(models.Exists(active))
    names = list(idle.order_by("pk").values_list("pk", flat=True)[:limit])
    if not names:
        return 0
    deleted, _ = retry_transient(using, lambda: idle.filter(pk__in=names).delete())
    return deleted
