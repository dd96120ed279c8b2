"""Claiming a batch of ready jobs: short transactions, rows locked by primary key,
no worker waiting on another's locks."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from django.core.exceptions import EmptyResultSet, ImproperlyConfigured
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.concurrency import admit, keys_seen, look_for_keys
from django_sqlqueue.db.expressions import PrimaryKeyIn
from django_sqlqueue.db.instances import job_rows
from django_sqlqueue.db.per_connection import PerConnection
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
    # SET LOCAL would outlive the claim in a caller's transaction: there, no pin.
    pinned = index_ordered and connection.vendor == "postgresql" and not connection.in_atomic_block
    if connection.vendor == "mysql":  # no UPDATE … RETURNING
        return retry_transient(candidates.db, lambda: _claim_without_returning(candidates, worker_id, limit, admitted))
    return _claim_returning(candidates, worker_id, limit, admitted, limits=bool(limited), pinned=pinned)


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


def _claim_returning(
    candidates: JobQuerySet,
    worker_id: str,
    limit: int,
    admitted: Callable[[list[Any]], list[Any]],
    *,
    limits: bool,
    pinned: bool,
) -> ClaimedJobs:
    """SQLite and PostgreSQL: the claim is an ``UPDATE … RETURNING`` (see
    :class:`_ClaimUpdate`), and the jobs are built after it commits
    (:mod:`~django_sqlqueue.db.instances`).

    Until this process has met a keyed job and while no rate limit is configured, the
    claim is ``UPDATE … WHERE id IN (first ready ids) AND concurrency_key IS NULL``:
    on PostgreSQL the ids are locked with ``FOR UPDATE SKIP LOCKED`` (as an array, read
    once), and SQLite has no row locks: the statement holds the database's write lock
    (``BEGIN IMMEDIATE``), and while it lasts no other process writes. When that takes
    fewer than it wanted and keyed jobs are waiting, or once limits are in play, a
    second transaction reads the first ready candidates (locked, on PostgreSQL), admits
    those under their limits and sets them ``RUNNING`` by id."""
    connection = connections[candidates.db]
    statement = claim_updates(candidates.model, connection)

    def claim_keyless(where: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if pinned:
            _walk_the_index(candidates.db)
        return statement.run(worker_id, where, params)

    def claim_admitted(wanted: int) -> list[tuple[Any, ...]]:
        if pinned:
            _walk_the_index(candidates.db)
        ready = candidates.values_list("pk", "task", "concurrency_key", "concurrency_limit", named=True)
        if connection.vendor == "postgresql":
            ready = ready.select_for_update(skip_locked=True)
        ids = [row.pk for row in admitted(list(ready[:wanted]))]
        return statement.run(worker_id, *statement.by_id(ids)) if ids else []

    plain = not limits and not keys_seen(candidates.db)
    # On PostgreSQL one statement outside a transaction is atomic by itself, and only
    # the pin needs one. SQLite's BEGIN IMMEDIATE takes the write lock before the
    # statement reads: on its own, the statement would read first, and could then fail
    # to take the lock from a writer that committed meanwhile, without waiting.
    atomic = pinned or connection.vendor == "sqlite"
    keyless = _keyless(candidates, limit, connection) if plain else None
    rows = retry_transient(candidates.db, lambda: claim_keyless(*keyless), atomic=atomic) if keyless else []
    if len(rows) < limit and (not plain or look_for_keys(candidates)):
        rows += retry_transient(candidates.db, lambda: claim_admitted(limit - len(rows)))
    return ClaimedJobs(_in_claim_order(candidates.model, statement.jobs(rows), candidates.query.order_by), lost=0)


def _keyless(
    candidates: JobQuerySet, limit: int, connection: BaseDatabaseWrapper
) -> tuple[str, tuple[Any, ...]] | None:
    """The condition on the first ``limit`` ready jobs without a concurrency key, as SQL
    and its parameters; None when nothing can match (``queues=[]``).

    Compiled before the claim's transaction begins: on SQLite that holds the write lock
    of the whole database, which the other claimers wait for."""
    ready = candidates.values("pk")[:limit]
    try:
        ready_sql, ready_params = ready.query.get_compiler(connection=connection).as_sql()
    except EmptyResultSet:
        return None
    if connection.vendor == "postgresql":
        ready_sql = f"= ANY(ARRAY({ready_sql} FOR UPDATE SKIP LOCKED))"
    else:
        ready_sql = f"IN ({ready_sql})"
    return f"id {ready_sql} AND concurrency_key IS NULL", tuple(ready_params)


def _claim_without_returning(
    candidates: JobQuerySet, worker_id: str, limit: int, admitted: Callable[[list[Any]], list[Any]]
) -> ClaimedJobs:
    """MySQL/MariaDB, which have no ``UPDATE … RETURNING``: read the candidates' ids
    without locks, then lock just those rows by primary key, checking again that they
    are still ready (InnoDB would otherwise lock every index record the ordered scan
    passes over), and set the admitted ones ``RUNNING`` by id."""
    rows = job_rows(candidates.model, connections[candidates.db])
    ids = list(candidates.values_list("pk", flat=True)[:limit])
    position = {pk: index for index, pk in enumerate(ids)}
    # Each locked row also brings the database's time, which becomes the attempt's start.
    locking = candidates.filter(PrimaryKeyIn(ids)).order_by().select_for_update(skip_locked=True)
    locked = list(locking.annotate(claim_time=DatabaseNow()).values_list(*rows.attnames, "claim_time"))
    jobs = sorted(rows.jobs([row[:-1] for row in locked], converted=True), key=lambda job: position[job.pk])
    lost = len(ids) - len(jobs)
    # Jobs over their limits stay READY; their locks go with the commit.
    jobs = admitted(jobs)
    if jobs:
        started_at = locked[0][-1]
        candidates.model._base_manager.using(candidates.db).filter(PrimaryKeyIn(job.pk for job in jobs)).update(
            status=JobStatus.RUNNING, worker=worker_id, started_at=started_at, attempts=F("attempts") + 1
        )
        for job in jobs:
            job.status = JobStatus.RUNNING
            job.worker = worker_id
            job.started_at = started_at
            job.attempts += 1
    return ClaimedJobs(jobs, lost)


class _ClaimUpdate:
    """``UPDATE`` jobs to ``RUNNING`` for a worker, started at the database's time with
    the attempt counted, ``RETURNING`` them (SQLite and PostgreSQL).

    PostgreSQL locks only the claimed rows, and they come back with the statement.
    SQLite's statement holds the write lock of the whole database, which the other
    claimers wait for: it returns only the ids, and the rows are read after it commits
    (in WAL a read neither waits for a writer nor holds one up). Returning every column
    there held the lock longer: two processes drained 13,400 jobs/s against 16,200 with
    the second read (medians of four rounds).

    Made once for each connection (:data:`claim_updates`); the worker is a parameter."""

    def __init__(self, model: type[Job], connection: BaseDatabaseWrapper) -> None:
        self.rows = job_rows(model, connection)
        self._connection = connection
        self._query = query = model._base_manager.all().query
        self._compiler = query.get_compiler(connection=connection)
        now_sql, now_params = self._compiler.compile(DatabaseNow().resolve_expression(query))
        self._table = connection.ops.quote_name(model._meta.db_table)
        self._setting = (
            f"UPDATE {self._table} SET status = %s, worker = %s, started_at = {now_sql}, attempts = attempts + 1"
        )
        self._now_params = tuple(now_params)
        self._ids_only = connection.vendor == "sqlite"

    def run(self, worker_id: str, where: str, params: Iterable[Any]) -> list[tuple[Any, ...]]:
        """What the statement returns of the jobs matching ``where`` (SQL with ``params``),
        now claimed for ``worker_id``: a row each, for :meth:`jobs`."""
        returning = "id" if self._ids_only else self.rows.columns
        setting = (JobStatus.RUNNING, worker_id, *self._now_params)
        with self._connection.cursor() as cursor:
            cursor.execute(f"{self._setting} WHERE {where} RETURNING {returning}", (*setting, *params))
            return list(cursor.fetchall())

    def by_id(self, ids: Iterable[int]) -> tuple[str, tuple[Any, ...]]:
        """The condition on the jobs ``ids`` (not empty), as SQL and its parameters."""
        sql, params = self._compiler.compile(PrimaryKeyIn(ids).resolve_expression(self._query))
        return sql, tuple(params)

    def jobs(self, returned: list[tuple[Any, ...]]) -> list[Job]:
        """The claimed jobs of what :meth:`run` returned (call it once the claim committed)."""
        if not self._ids_only:
            return self.rows.jobs(returned)
        if not returned:
            return []
        where, params = self.by_id(pk for (pk,) in returned)
        with self._connection.cursor() as cursor:
            cursor.execute(f"SELECT {self.rows.columns} FROM {self._table} WHERE {where}", params)
            return self.rows.jobs(cursor.fetchall())


#: Each connection's :class:`_ClaimUpdate`, compiled once.
claim_updates = PerConnection(_ClaimUpdate)


def _in_claim_order(model: type[Job], jobs: list[Job], order_by: Iterable[Any]) -> list[Job]:
    """``jobs`` sorted as ``order_by`` (the candidates' field names, ``-`` before a
    descending one) sorts their rows: one stable sort per field, the last field first."""
    for name in reversed(list(order_by)):
        field = name.removeprefix("-")
        attname = model._meta.get_field(field).attname  # type: ignore[union-attr]
        jobs.sort(key=attrgetter(attname), reverse=name != field)
    return jobs
