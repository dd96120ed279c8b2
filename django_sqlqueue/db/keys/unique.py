"""Unique jobs: writing jobs that carry a ``unique_key`` (new ones, and ended ones made
active again), and finding the active job that holds a key when the unique index
(``ActiveKeyConstraint``) refused one.

The index decides, never a read before the write: two transactions inserting one key
at once are ordered by the database (the second waits for the first to end, then
skips the key or, if the first rolled back, writes it)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, connections, models, transaction
from django.db.models.expressions import DatabaseDefault

from django_sqlqueue.db import inserting
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.lifecycle import allowed, written
from django_sqlqueue.db.schema.indexes import ActiveKeyConstraint
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.exceptions import SQLQueueError, UniqueJobExists
from django_sqlqueue.rules.lifecycle import REPLACE

if TYPE_CHECKING:
    # The table, not the model: the model holds the manager, which calls this module.
    from django_sqlqueue.db.schema.table import AbstractJob, JobT

#: How many times a job is written again when the job that held its key ended between
#: the conflict and the read of that job: each time it took a new holder to refuse it.
ROUNDS = 5


def holders(model: type[JobT], using: str, keys: Collection[str]) -> dict[str, JobT]:
    """The jobs holding ``keys`` (active, or ended and kept until pruned), by key, read
    through the unique index."""
    if not keys:
        return {}
    constraint = next(c for c in model._meta.constraints if isinstance(c, ActiveKeyConstraint))
    held = engine_for(using).holding(model._base_manager.using(using), constraint, list(keys))
    return {job.unique_key: job for job in held if job.unique_key is not None}


def update_each(rows: models.QuerySet[Any], keyed: Collection[int], using: str, **writes: Any) -> set[int]:
    """Write ``writes`` to ``rows`` (jobs made active again): those without a
    ``unique_key`` in one ``UPDATE``, each of ``keyed`` (the ids of those with one) in a
    savepoint of its own, so that one whose key another active job holds now (the
    unique index refuses it) is left as it is and the others are written. The ids of
    those left."""
    rows.filter(unique_key__isnull=True).update(**writes)
    left = set()
    for pk in sorted(keyed):
        try:
            with transaction.atomic(using=using):
                rows.filter(pk=pk).update(**writes)
        except IntegrityError:
            left.add(pk)
    return left


def write(jobs: Sequence[JobT], using: str, batch_size: int, on_conflict: str) -> list[JobT]:
    """:func:`insert_unique` in the caller's transaction, or in one of its own.

    On MySQL/MariaDB, enqueues of one key that meet an uncommitted holder which then
    rolls back can deadlock on the unique index's record locks, and InnoDB rolls the
    victim's whole transaction back. In a transaction of its own (the caller has none)
    the enqueue is then tried again; inside the caller's, that transaction is gone, and
    the error (``OperationalError`` 1213) is the caller's to retry, as any deadlock."""
    if connections[using].in_atomic_block:
        # Savepoint only to raise: the caller's transaction stays usable, without the jobs.
        with transaction.atomic(using=using, savepoint=on_conflict == "raise"):
            return insert_unique(jobs, using, batch_size, on_conflict)
    return retry_transient(using, lambda: insert_unique(jobs, using, batch_size, on_conflict))


def insert_unique(jobs: Sequence[JobT], using: str, batch_size: int, on_conflict: str) -> list[JobT]:
    """Write ``jobs`` (in the caller's transaction); a job whose key an active job (or an
    earlier job of ``jobs``) holds is not written: in its place comes the holder, with
    ``created`` False, its arguments and run time replaced by the job's if it is
    ``READY`` and ``on_conflict`` is ``"replace"``; ``"raise"`` raises
    :class:`UniqueJobExists` instead."""
    model = type(jobs[0])
    held: dict[int, JobT] = {}
    waiting = list(jobs)
    for _ in range(ROUNDS):
        first, repeated = _first_per_key(waiting)
        refused = [*inserting.insert(first, using, batch_size), *repeated] if first else repeated
        found = holders(model, using, {job.unique_key for job in refused if job.unique_key})
        held.update({id(job): found[job.unique_key] for job in refused if job.unique_key in found})
        # The holder ended since the conflict: write the job after all.
        waiting = [job for job in refused if job.unique_key not in found]
        if not waiting:
            break
    else:
        raise SQLQueueError(f"The unique_key {waiting[0].unique_key!r} changed hands {ROUNDS} times: try again.")
    results = []
    for job in jobs:
        result = held.get(id(job), job)
        result.created = result is job
        if not result.created:
            if on_conflict == "raise":
                raise UniqueJobExists(f"Job #{result.pk} already holds the unique_key {job.unique_key!r}.", result)
            if on_conflict == "replace":
                _replace(result, job, using)
        results.append(result)
    return results


def _first_per_key(jobs: Sequence[JobT]) -> tuple[list[JobT], list[JobT]]:
    """The jobs to insert (the first of each key, and every job without one), and the rest."""
    first: list[JobT] = []
    repeated: list[JobT] = []
    keys: set[str] = set()
    for job in jobs:
        (repeated if job.unique_key in keys else first).append(job)
        if job.unique_key is not None:
            keys.add(job.unique_key)
    return first, repeated


def _replace(holder: AbstractJob, job: AbstractJob, using: str) -> None:
    """Give a ``READY`` holder ``job``'s arguments and run time; a running one is left alone."""
    run_at = DatabaseNow() if isinstance(job.run_at, DatabaseDefault) else job.run_at
    jobs = type(job)._base_manager.using(using)
    replaced = written(REPLACE, args=job.args, kwargs=job.kwargs, run_at=run_at)
    if jobs.filter(allowed(REPLACE), pk=holder.pk).update(**replaced):
        holder.refresh_from_db(using=using, fields=["args", "kwargs", "run_at", "status"])
