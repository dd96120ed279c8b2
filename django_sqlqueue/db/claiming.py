"""Claiming a batch of ready jobs: short transactions, rows locked by primary key,
no worker waiting on another's locks."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.core.exceptions import EmptyResultSet, ImproperlyConfigured
from django.db import connections
from django.db.models import F

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.concurrency import admit, keys_seen, look_for_keys
from django_sqlqueue.db.expressions import PrimaryKeyIn
from django_sqlqueue.db.ratelimits import Limited, draw
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.db.vendors import CLAIM_PROBLEM_HINTS, claim_problem
from django_sqlqueue.status import JobStatus

if TYPE_CHECKING:
    # Type-only: the manager calls this module, and the model holds the manager.
    from django_sqlqueue.managers import JobQuerySet
    from django_sqlqueue.models import Job


class ClaimedJobs(list["Job"]):
    """The jobs one claim took, in claim order.

    ``lost`` counts candidates another worker locked first (MySQL/MariaDB, where
    candidates are read before they are locked): when it stays above zero there are
    more workers than work. PostgreSQL's ``SKIP LOCKED ... LIMIT`` hands each claimer
    rows nobody holds, and SQLite claims one writer at a time, so it is 0 there."""

    def __init__(self, jobs: list[Job], lost: int) -> None:
        super().__init__(jobs)
        self.lost = lost


def claim(
    candidates: JobQuerySet,
    *,
    worker_id: str,
    limit: int,
    limited: Limited | None = None,
    index_ordered: bool = False,
) -> ClaimedJobs:
    """Claim the first ``limit`` of ``candidates`` (ordered, unsliced) for ``worker_id``,
    those that fit under their concurrency limits and, for the ``limited`` tasks, their
    rate limits.

    ``index_ordered`` says that an index holds the candidates in claim order (all
    queues, or one, and no other filter): the claim then walks that index whatever the
    table's statistics say (see :func:`_walk_the_index`)."""
    connection = connections[candidates.db]
    if problem := claim_problem(connection):
        raise ImproperlyConfigured(f"{problem}. {CLAIM_PROBLEM_HINTS[connection.vendor]}")
    admitted = functools.partial(_admitted, candidates, limited or {})
    if connection.vendor == "sqlite":
        return _claim_in_one_write(candidates, worker_id, limit, admitted, limits=bool(limited))
    # SET LOCAL would outlive the claim in a caller's transaction: there, no pin.
    pinned = index_ordered and connection.vendor == "postgresql" and not connection.in_atomic_block
    return retry_transient(
        candidates.db, lambda: _claim_in_transaction(candidates, worker_id, limit, admitted, pinned=pinned)
    )


def _walk_the_index(using: str) -> None:
    """Make PostgreSQL walk the ready index in claim order for the rest of this
    transaction, rather than sort every ready row to take the first ``limit``.

    The planner prefers the sort whenever the table's statistics say few rows are
    ready, and they say so after autovacuum analyzed a queue that had drained empty:
    until it analyzes again (a minute, or more while busy), each claim of a fresh
    backlog read and sorted the whole of it (170 ms per claim at 100,000 ready jobs).
    The index walk stops after ``limit`` rows whatever the statistics, so it is never
    the worse plan when an index holds the claim order; the sort only pays where one
    does not (several queues, or a caller's filter), and there nothing is pinned."""
    with connections[using].cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")


def _admitted(candidates: JobQuerySet, limited: Limited, jobs: list[Any]) -> list[Any]:
    """The locked ``jobs`` that fit their concurrency limits, then their rate limits
    (keys' rows are always locked before buckets', so claimers never deadlock)."""
    return draw(candidates.db, admit(candidates.db, candidates.model, jobs), limited)


def _claim_in_one_write(
    candidates: JobQuerySet,
    worker_id: str,
    limit: int,
    admitted: Callable[[list[Any]], list[Any]],
    *,
    limits: bool,
) -> ClaimedJobs:
    """SQLite has no row locks: a claim is a write transaction (``BEGIN IMMEDIATE``), and
    while it lasts no other process writes. The claimed jobs are read after it commits:
    the write lock is never held while Python builds the jobs.

    Until this process has met a keyed job and while no rate limit is configured, the
    transaction is one ``UPDATE … WHERE id IN (first ready ids) AND concurrency_key IS
    NULL RETURNING id``, as before limits existed. When that takes fewer than it wanted
    and keyed jobs are waiting, or once limits are in play, a transaction reads the
    first ready ids (with their keys), admits those under their limits and sets them
    ``RUNNING`` by id."""
    connection = connections[candidates.db]
    query = candidates.model._base_manager.all().query
    compiler = query.get_compiler(connection=connection)
    now_sql, now_params = compiler.compile(DatabaseNow().resolve_expression(query))
    table = connection.ops.quote_name(candidates.model._meta.db_table)
    update = f"UPDATE {table} SET status = %s, worker = %s, started_at = {now_sql}, attempts = attempts + 1 WHERE "
    setting = (JobStatus.RUNNING, worker_id, *now_params)

    def claim_keyless() -> list[int]:
        try:
            ready_sql, ready_params = candidates.values("pk")[:limit].query.get_compiler(connection=connection).as_sql()
        except EmptyResultSet:  # e.g. queues=[]: nothing can match
            return []
        with connection.cursor() as cursor:
            cursor.execute(
                f"{update}id IN ({ready_sql}) AND concurrency_key IS NULL RETURNING id", (*setting, *ready_params)
            )
            return [pk for (pk,) in cursor.fetchall()]

    def claim_admitted(wanted: int) -> list[int]:
        ready = candidates.values_list("pk", "task", "concurrency_key", "concurrency_limit", named=True)
        ids = [row.pk for row in admitted(list(ready[:wanted]))]
        if not ids:
            return []
        with connection.cursor() as cursor:
            cursor.execute(f"{update}id IN ({', '.join(['%s'] * len(ids))}) RETURNING id", (*setting, *ids))
            return [pk for (pk,) in cursor.fetchall()]

    plain = not limits and not keys_seen(candidates.db)
    ids = retry_transient(candidates.db, claim_keyless) if plain else []
    if len(ids) < limit and (not plain or look_for_keys(candidates)):
        ids += retry_transient(candidates.db, lambda: claim_admitted(limit - len(ids)))
    claimed = candidates.model._base_manager.using(candidates.db).filter(PrimaryKeyIn(ids))
    return ClaimedJobs(list(claimed.order_by(*candidates.query.order_by)) if ids else [], lost=0)


def _claim_in_transaction(
    candidates: JobQuerySet, worker_id: str, limit: int, admitted: Callable[[list[Any]], list[Any]], *, pinned: bool
) -> ClaimedJobs:
    if pinned:
        _walk_the_index(candidates.db)
    # Each locked row also brings the database's time, which becomes the attempt's start.
    locking = candidates.select_for_update(skip_locked=True).annotate(claim_time=DatabaseNow())
    if connections[candidates.db].vendor == "mysql":
        # Read the candidates without locks, then lock just those rows by primary key,
        # checking again that they are still ready: InnoDB would otherwise lock every
        # index record the ordered scan passes over.
        ids = list(candidates.values_list("pk", flat=True)[:limit])
        position = {pk: index for index, pk in enumerate(ids)}
        jobs = sorted(locking.filter(PrimaryKeyIn(ids)).order_by(), key=lambda job: position[job.pk])
        lost = len(ids) - len(jobs)
    else:
        jobs = list(locking[:limit])
        lost = 0
    # Jobs over their limits stay READY; their locks go with the commit.
    jobs = admitted(jobs)
    if jobs:
        started_at = jobs[0].claim_time  # type: ignore[attr-defined]
        candidates.model._base_manager.using(candidates.db).filter(PrimaryKeyIn(job.pk for job in jobs)).update(
            status=JobStatus.RUNNING, worker=worker_id, started_at=started_at, attempts=F("attempts") + 1
        )
        for job in jobs:
            del job.claim_time  # type: ignore[attr-defined]
            job.status = JobStatus.RUNNING
            job.worker = worker_id
            job.started_at = started_at
            job.attempts += 1
    return ClaimedJobs(jobs, lost)
