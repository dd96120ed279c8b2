"""Deleting finished jobs past their retention (``SQLQUEUE_RETENTION``), a chunk at a time.

Each chunk reads up to ``batch_size`` primary keys from the ``finished_at`` index
(a plain read: no lock), then deletes those rows by primary key in a short transaction
of its own, checking again that each is still finished and old enough: a job the admin
retried meanwhile is ``READY`` and stays. Deleting by key takes locks on those rows
alone (no range, so no gap locks on MySQL), rows no claim or finish ever waits on:
claims read ``READY`` jobs and finishes write ``RUNNING`` ones. A deadlock, lock wait
timeout or busy SQLite is retried with a backoff (``retry_transient``).

Successes and failures are first counted into the admin's hourly chart (``rollup``): a
job of the chart's window is deleted only once its hour is counted, so with a short
retention it stays until its hour has ended and closed (about an hour at most)."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django_sqlqueue.db import batches, dependencies, rollup
from django_sqlqueue.db.clock import DatabaseNowPlus
from django_sqlqueue.db.expressions import PrimaryKeyIn
from django_sqlqueue.db.keys import concurrency
from django_sqlqueue.db.lifecycle import allowed
from django_sqlqueue.db.schema.indexes import finished_in
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.rules.lifecycle import PRUNE, JobStatus

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from django_sqlqueue.db.schema.table import AbstractJob

#: Rows one chunk deletes by default: big enough that a million rows take a thousand
#: statements, small enough that each transaction is over in milliseconds.
BATCH_SIZE = 1000

#: The share of its time pruning spends deleting by default: after each chunk it rests
#: three times as long as the chunk took. Flat out, a prune takes a core of the database
#: (and, on SQLite, its one write lock) from the workers beside it; at a quarter, a
#: million rows still go in under a minute on PostgreSQL and SQLite (docs/howto/retention.md).
DUTY_CYCLE = 0.25


def rest_after(busy: float, duty_cycle: float) -> float:
    """Seconds to rest after ``busy`` seconds of deleting, so that deleting takes
    ``duty_cycle`` (0 to 1) of the time: none at 1."""
    return busy * (1 - duty_cycle) / duty_cycle


#: How long each finished status is kept: ``None`` keeps it for ever.
Retention = Mapping[JobStatus, "datetime.timedelta | None"]


@dataclass
class Pruned:
    """What :func:`prune` deleted, by status, and whether it got through everything due."""

    deleted: dict[JobStatus, int] = field(default_factory=dict)
    complete: bool = True
    #: Concurrency keys' rows that no active job had, deleted (one chunk a call).
    keys: int = 0
    #: Finished batches whose jobs were all deleted, deleted (one chunk a call).
    batches: int = 0

    @property
    def total(self) -> int:
        return sum(self.deleted.values())


def due(
    jobs: QuerySet[AbstractJob], status: JobStatus, kept: datetime.timedelta, counted_until: datetime.datetime
) -> QuerySet[AbstractJob]:
    """The jobs of ``status`` that finished more than ``kept`` ago by the database's clock
    (served by the ``sqlqueue_job_finished`` index on ``finished_at, status``, which
    :func:`~django_sqlqueue.db.schema.indexes.finished_in` reads on MySQL/MariaDB too), and, for
    the statuses the chart counts, before ``counted_until`` (``rollup.Hours``). Never a
    job another still waits for (``db/dependencies.py``): the sweep settles that first; never
    a job of an unfinished batch (``db/batches.py``), which counts it when it finishes."""
    if status not in PRUNE.sources:
        raise ValueError(f"{status} is not pruned: prune moves only {', '.join(PRUNE.sources)} (rules/lifecycle.py).")
    # The status as the finished indexes read it, within what prune allows.
    candidates = jobs.filter(allowed(PRUNE), finished_in(status), finished_at__lt=DatabaseNowPlus(-kept))
    candidates = candidates.exclude(dependencies.waited_for()).filter(batches.prunable())
    return candidates.filter(finished_at__lt=counted_until) if status in rollup.CHARTED else candidates


def retention_periods(retention: Retention) -> dict[JobStatus, datetime.timedelta]:
    """The finished statuses that are pruned at all, with how long each is kept."""
    return {status: kept for status, kept in retention.items() if kept is not None}


def count(jobs: QuerySet[AbstractJob], retention: Retention) -> dict[JobStatus, int]:
    """How many jobs of each status :func:`prune` would delete now, once it has counted
    the closed hours (this only reads)."""
    closed = rollup.hours(jobs.db).closed
    return {status: due(jobs, status, kept, closed).count() for status, kept in retention_periods(retention).items()}


def prune(
    jobs: QuerySet[AbstractJob],
    retention: Retention,
    *,
    batch_size: int = BATCH_SIZE,
    max_chunks: int | None = None,
    on_chunk: Callable[[JobStatus, int], None] | None = None,
    duty_cycle: float = 1.0,
) -> Pruned:
    """Delete the jobs past ``retention``, ``batch_size`` at a time, each chunk in its
    own transaction, calling ``on_chunk(status, deleted)`` after each, and resting
    between chunks so that deleting takes ``duty_cycle`` of the time (:func:`rest_after`).

    With ``max_chunks``, stop after that many chunks (the supervisor's share of one
    tick): ``complete`` is then False if jobs may be left to delete. Never touches a
    ``READY`` or ``RUNNING`` job, nor one whose status has no retention.

    It counts the closed hours first (one batch of them with ``max_chunks``) and deletes
    the counted hours past ``rollup.KEEP``: ``complete`` is False too while hours are
    left to count. Once it got through the due jobs, it also deletes up to
    ``batch_size`` rows of concurrency keys that no active job has (``keys``), and as many
    finished batches none of whose jobs is left (``batches``)."""
    hours = rollup.catch_up(jobs.db, batches=None if max_chunks is None else 1)
    rollup.forget(jobs.db)
    pruned = Pruned(complete=not hours.missing)
    chunks = 0
    for status, kept in retention_periods(retention).items():
        pruned.deleted[status] = 0
        while True:
            if max_chunks is not None and chunks >= max_chunks:
                pruned.complete = False
                return pruned
            chunks += 1
            began = time.monotonic()
            found, deleted = _chunk(due(jobs, status, kept, hours.counted_until), batch_size)
            pruned.deleted[status] += deleted
            if on_chunk is not None and found:
                on_chunk(status, deleted)
            if found < batch_size:
                break
            if rest := rest_after(time.monotonic() - began, duty_cycle):
                time.sleep(rest)
    # Once the due jobs are gone: not again on every turn of a backlog (an anti-join over the keys).
    pruned.keys = concurrency.forget_idle_keys(jobs.model, jobs.db, batch_size)
    pruned.batches = retry_transient(jobs.db, lambda: batches.forget_finished(jobs.model, jobs.db, batch_size))
    return pruned


def _chunk(candidates: QuerySet[AbstractJob], batch_size: int) -> tuple[int, int]:
    """Delete one chunk of ``candidates``: (how many were found, how many were still due)."""
    pks = list(candidates.order_by("finished_at").values_list("pk", flat=True)[:batch_size])
    if not pks:
        return 0, 0

    # Checked again, in the DELETE: the admin may have retried a job since it was read.
    def delete() -> int:
        deleted, _ = candidates.filter(PrimaryKeyIn(pks)).delete()
        dependencies.forget(candidates.db, pks)
        return deleted

    return len(pks), retry_transient(candidates.db, delete)
