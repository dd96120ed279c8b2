"""Ending ready jobs whose ``expires_at`` has come (the ``expire`` transition), a chunk
at a time: what the maintenance leader's expiry sweep runs.

The claim never starts an expired job (its guard says ``NOT_EXPIRED``), so the sweep
only gives such jobs their end: ``CANCELLED`` with ``end_reason`` "expired". Each chunk
reads up to ``batch_size`` ids from the expiring index (a plain read: no lock), then
moves those rows in one ``UPDATE`` by primary key that checks the guard again: a job a
worker claimed meanwhile is ``RUNNING`` and stays so. That ``UPDATE`` is the
compare-and-set that makes two sweepers (two leaders for a moment) end each job once
and count it once: each counts only the rows its own statement changed. A chunk with
jobs of batches recounts those batches in the transaction of its ``UPDATE``
(``batches.recount``), completing those it left without an unfinished job; the read
that finds the chunk carries each job's batch, so a chunk without costs nothing more."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django_sqlqueue.db import batches
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.expressions import PrimaryKeyIn
from django_sqlqueue.db.lifecycle import allowed, written
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.rules.lifecycle import EXPIRE, EXPIRED

if TYPE_CHECKING:
    from django.db.models import QuerySet

    # The table, not the model: the model holds the manager, which calls this module.
    from django_sqlqueue.db.schema.table import AbstractJob

#: Jobs ended by one statement of the sweep.
BATCH_SIZE = 1000


def expire(
    jobs: QuerySet[AbstractJob],
    *,
    batch_size: int | None = None,
    max_chunks: int | None = None,
    ended: Callable[[list[AbstractJob]], object] | None = None,
) -> int:
    """End the expired ready jobs among ``jobs``, ``batch_size`` at a time (each chunk
    one short statement), at most ``max_chunks`` chunks; returns how many this call
    ended. Stops when a chunk finds fewer than ``batch_size`` (default :data:`BATCH_SIZE`).

    With ``ended``, each chunk instead locks its rows (skipping those a claimer holds),
    ends them and calls ``ended`` with them, inside its transaction: exactly the jobs
    this call ended, each once, for their signals."""
    batch_size = BATCH_SIZE if batch_size is None else batch_size
    total = chunks = 0
    while max_chunks is None or chunks < max_chunks:
        chunks += 1
        found, moved = _chunk(jobs, batch_size, ended)
        total += moved
        if found < batch_size:
            break
    return total


def _chunk(
    jobs: QuerySet[AbstractJob], batch_size: int, ended: Callable[[list[AbstractJob]], object] | None
) -> tuple[int, int]:
    """End one chunk: (how many were found, how many this call ended)."""
    due = jobs.filter(allowed(EXPIRE))
    found = dict(due.order_by("expires_at").values_list("pk", "batch_id")[:batch_size])
    if not found:
        return 0, 0
    values = written(EXPIRE, finished_at=DatabaseNow(), end_reason=EXPIRED)
    chunk = due.filter(PrimaryKeyIn(found))
    if ended is None and not any(found.values()):
        return len(found), retry_transient(due.db, lambda: chunk.update(**values), atomic=False)

    def ended_and_counted() -> int:
        if ended is None:
            moved = chunk.update(**values)
        else:
            # Locked, the guard checked again: the rows the UPDATE then moves, no other.
            rows = list(chunk.select_for_update(skip_locked=True))
            if rows:
                due.filter(PrimaryKeyIn([row.pk for row in rows])).update(**values)
                for row in rows:
                    row.end_reason = EXPIRED
                ended(rows)
            moved = len(rows)
        batches.recount(jobs.model, due.db, found.values())
        return moved

    return len(found), retry_transient(due.db, ended_and_counted)
