"""Claiming a batch of ready jobs: short transactions, rows locked by primary key,
no worker waiting on another's locks."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, cast

from django.core.exceptions import EmptyResultSet, ImproperlyConfigured
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.db.candidate_window import CandidateWindow
from django_sqlqueue.db.claim_turn import ClaimTurn
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.expressions import PrimaryKeyIn
from django_sqlqueue.db.instances import JobRows
from django_sqlqueue.db.keys.concurrency import admit, keys_seen, note_keys
from django_sqlqueue.db.lifecycle import written
from django_sqlqueue.db.rates import Limited, draw

# The table, not the model: the model holds the manager, which calls this module.
from django_sqlqueue.db.schema.table import AbstractJob, JobT
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.rules.lifecycle import CLAIM

if TYPE_CHECKING:
    from django.db.models import QuerySet


#: The order a claim takes ready jobs in: higher priority first, then the earliest
#: due, then the oldest (``JobQuerySet.in_claim_order`` in the managers).
CLAIM_ORDER = ("-priority", "run_at", "id")


class Candidates(Generic[JobT]):
    """The ready jobs a claim may take, on the database ``using``: ``build()`` makes
    them as a queryset in :data:`CLAIM_ORDER`, only when the claim needs one.

    ``shape`` is what they were built from (the queues, those left out), when nothing
    else went in: candidates of one shape make the same statement, which a connection
    then compiles once (:class:`_CandidateStatements`); None for a caller's filter."""

    def __init__(
        self, model: type[JobT], using: str, build: Callable[[], QuerySet[JobT]], shape: Hashable | None
    ) -> None:
        self.model = model
        self.using = using
        self.shape = shape
        self._build = build

    @functools.cached_property
    def queryset(self) -> QuerySet[JobT]:
        return self._build()


class ClaimedJobs(list[JobT]):
    """The jobs one claim took, in claim order.

    ``lost`` counts candidates another worker locked first (MySQL/MariaDB, where
    candidates are read before they are locked): when it stays above zero there are
    more workers than work. PostgreSQL's ``SKIP LOCKED ... LIMIT`` hands each claimer
    rows nobody holds, and SQLite claims one writer at a time, so it is 0 there."""

    def __init__(self, jobs: list[JobT], lost: int) -> None:
        super().__init__(jobs)
        self.lost = lost


def claim(
    candidates: Candidates[JobT],
    *,
    worker_id: str,
    limit: int,
    limited: Limited | None = None,
    index_ordered: bool = False,
) -> ClaimedJobs[JobT]:
    """Claim the first ``limit`` of ``candidates`` for ``worker_id``,
    those that fit under their concurrency limits and, for the ``limited`` tasks, their
    rate limits.

    ``index_ordered`` says that an index holds the candidates in claim order (all
    queues, or one, and no other filter): the claim then walks that index whatever the
    table's statistics say (see :func:`_walk_the_index`)."""
    connection = connections[candidates.using]
    if problem := engine(connection).claim_problem():
        raise ImproperlyConfigured(f"{problem}. {engine(connection).claim_hint}")
    admitted = functools.partial(_admitted, candidates, limited or {})
    # Until this process has met a keyed job, and while no rate limit is configured,
    # the candidates are the same for every claim of the same queues: their statement
    # is kept. Otherwise they are built now, before any transaction: with rate limits
    # that reads their buckets, which SQLite's write lock should not wait for.
    plain = not limited and not keys_seen(candidates.using)
    if not plain:
        candidates.queryset  # noqa: B018 (built here, not inside the claim's transaction)
    # SET LOCAL would outlive the claim in a caller's transaction: there, no pin.
    pinned = index_ordered and connection.vendor == "postgresql" and not connection.in_atomic_block
    if connection.vendor == "mysql":  # no UPDATE … RETURNING
        with engine(connection).made(ClaimTurn, candidates.model).held():
            claimed = retry_transient(
                candidates.using, lambda: _claim_without_returning(candidates, worker_id, limit, admitted, plain=plain)
            )
    else:
        claimed = _claim_returning(candidates, worker_id, limit, admitted, plain=plain, pinned=pinned)
    # Made from the rows of ``candidates.model``: instances of it.
    return cast("ClaimedJobs[JobT]", claimed)


#: Makes PostgreSQL walk the ready index in claim order for the rest of its
#: transaction (see :func:`_walk_the_index`).
WALK_THE_INDEX = "SET LOCAL enable_sort = off"


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
        cursor.execute(WALK_THE_INDEX)


def _sends_several(connection: BaseDatabaseWrapper) -> bool:
    """Whether the connection's cursors send several statements in one query: psycopg's
    client-side binding, which Django uses on PostgreSQL unless ``OPTIONS`` ask for
    ``server_side_binding`` (then each statement goes with its parameters on its own).

    Several statements of one query without ``BEGIN`` run as one transaction: the pin
    (:func:`_walk_the_index`) and the claim then cost one round trip, not four with
    the ``BEGIN`` and ``COMMIT`` of a transaction around them (5% more jobs a second
    for two processes draining, measured with the Quickstart's settings)."""
    from psycopg import ClientCursor  # PostgreSQL's driver, only there

    connection.ensure_connection()
    return issubclass(connection.connection.cursor_factory, ClientCursor)


def _admitted(candidates: Candidates[Any], limited: Limited, jobs: list[Any]) -> list[Any]:
    """The locked ``jobs`` that fit their concurrency limits, then their rate limits
    (keys' rows are always locked before buckets', so claimers never deadlock)."""
    return draw(candidates.using, admit(candidates.using, candidates.model, jobs), limited)


def _claim_returning(
    candidates: Candidates[Any],
    worker_id: str,
    limit: int,
    admitted: Callable[[list[Any]], list[Any]],
    *,
    plain: bool,
    pinned: bool,
) -> ClaimedJobs[AbstractJob]:
    """SQLite and PostgreSQL: the claim is an ``UPDATE … RETURNING`` (see
    :class:`_ClaimUpdate`), and the jobs are built after it commits
    (:mod:`~django_sqlqueue.db.instances`).

    Until this process has met a keyed job and while no rate limit is configured
    (``plain``), the claim is ``UPDATE … WHERE id IN (first ready ids) AND concurrency_key IS NULL``:
    on PostgreSQL the ids are locked with ``FOR UPDATE SKIP LOCKED`` (as an array, read
    once), and SQLite has no row locks: the statement holds the database's write lock
    (``BEGIN IMMEDIATE``), and while it lasts no other process writes. When that takes
    fewer than it wanted and keyed jobs are waiting, or once limits are in play, a
    second transaction reads the first ready candidates (locked, on PostgreSQL), admits
    those under their limits and sets them ``RUNNING`` by id."""
    using = candidates.using
    connection = connections[using]
    statement = engine(connection).made(_ClaimUpdate, candidates.model)
    # The pin goes with the claim's own statement where the driver sends both at once.
    pin_with_it = pinned and _sends_several(connection)

    def claim_keyless(where: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if pinned and not pin_with_it:
            _walk_the_index(using)
        return statement.run(worker_id, where, params, pinned=pin_with_it)

    def claim_admitted(wanted: int) -> list[tuple[Any, ...]]:
        if pinned:
            _walk_the_index(using)
        ready = candidates.queryset.values_list("pk", "task", "concurrency_key", "concurrency_limit", named=True)
        if connection.vendor == "postgresql":
            ready = ready.select_for_update(skip_locked=True)
        ids = [row.pk for row in admitted(list(ready[:wanted]))]
        return statement.run(worker_id, *statement.by_id(ids)) if ids else []

    # On PostgreSQL one query outside a transaction is atomic by itself, the pin sent
    # with it included; only a pin sent on its own needs a transaction. SQLite's BEGIN
    # IMMEDIATE takes the write lock before the statement reads: on its own, the
    # statement would read first, and could then fail to take the lock from a writer
    # that committed meanwhile, without waiting.
    atomic = (pinned and not pin_with_it) or connection.vendor == "sqlite"
    keyless = _keyless(candidates, limit, connection) if plain else None
    rows = retry_transient(using, lambda: claim_keyless(*keyless), atomic=atomic) if keyless else []
    if len(rows) < limit and (not plain or note_keys(using, _keyed_among(candidates, connection))):
        rows += retry_transient(using, lambda: claim_admitted(limit - len(rows)))
    return ClaimedJobs(_in_claim_order(candidates.model, statement.jobs(rows)), lost=0)


def _keyless(
    candidates: Candidates[Any], limit: int, connection: BaseDatabaseWrapper
) -> tuple[str, tuple[Any, ...]] | None:
    """The condition on the first ``limit`` of ``candidates`` without a concurrency key,
    as SQL and its parameters; None when nothing can match (``queues=[]``).

    Made before the claim's transaction begins: on SQLite that holds the write lock
    of the whole database, which the other claimers wait for."""
    made = engine(connection).made(_CandidateStatements, candidates.model).of(candidates, kept=True)
    if made is None:
        return None
    if connection.vendor == "postgresql":
        ready = f"= ANY(ARRAY({made.ready} LIMIT %s FOR UPDATE SKIP LOCKED))"
    else:
        ready = f"IN ({made.ready} LIMIT %s)"
    return f"id {ready} AND concurrency_key IS NULL", (*made.ready_params, limit)


def _keyed_among(candidates: Candidates[Any], connection: BaseDatabaseWrapper) -> bool:
    """Whether jobs with a concurrency key are among ``candidates``, which a plain
    claim left out: asked through the condition made once for their shape, as every
    claim that comes back short asks it (building and compiling the candidates for it
    cost such a claim, one of a worker taking jobs as they come, more than its own
    statement)."""
    statements = engine(connection).made(_CandidateStatements, candidates.model)
    made = statements.of(candidates, kept=True)
    if made is None:
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {statements.table} WHERE ({made.where}) AND concurrency_key IS NOT NULL LIMIT 1",
            made.where_params,
        )
        return cursor.fetchone() is not None


class CandidateSQL(NamedTuple):
    """The candidates of a claim as SQL."""

    #: ``SELECT`` of their ids in claim order, for a ``LIMIT`` to follow.
    ready: str
    ready_params: tuple[Any, ...]
    #: Their condition alone, on the jobs table (MySQL/MariaDB's lock, the look for
    #: keyed jobs).
    where: str
    where_params: tuple[Any, ...]


class _CandidateStatements:
    """Candidates as SQL (:class:`CandidateSQL`), made once for each shape of them
    (:attr:`Candidates.shape`) while nothing but the shape went in: building the
    candidates' queryset and compiling it cost each claim about 500 µs, the same for
    every claim of a worker."""

    #: The most shapes kept; past it they are made again. A worker has one, and one
    #: more for each set of its queues paused at once.
    KEPT = 256

    def __init__(self, model: type[AbstractJob], connection: BaseDatabaseWrapper) -> None:
        self._connection = connection
        self._made: dict[Hashable, CandidateSQL | None] = {}
        #: The jobs table, quoted, for a statement on :attr:`CandidateSQL.where`.
        self.table = connection.ops.quote_name(model._meta.db_table)

    def of(self, candidates: Candidates[Any], *, kept: bool) -> CandidateSQL | None:
        """``candidates`` as SQL, None when nothing can match (``queues=[]``); ``kept``
        for their shape when only the shape went in (no limits in play)."""
        shape = candidates.shape
        if not kept or shape is None:
            return self._make(candidates.queryset)
        if shape not in self._made:
            if len(self._made) >= self.KEPT:
                self._made.clear()
            self._made[shape] = self._make(candidates.queryset)
        return self._made[shape]

    def _make(self, candidates: QuerySet[AbstractJob]) -> CandidateSQL | None:
        ids = candidates.values("pk")
        compiler = ids.query.get_compiler(connection=self._connection)
        try:
            ready, ready_params = compiler.as_sql()
            where, where_params = compiler.compile(ids.query.where)
        except EmptyResultSet:
            return None
        return CandidateSQL(ready, tuple(ready_params), where, tuple(where_params))


#: Each connection's :class:`_CandidateStatements`.


def _claim_without_returning(
    candidates: Candidates[Any],
    worker_id: str,
    limit: int,
    admitted: Callable[[list[Any]], list[Any]],
    *,
    plain: bool,
) -> ClaimedJobs[AbstractJob]:
    """MySQL/MariaDB, which have no ``UPDATE … RETURNING``: read the candidates' ids
    without locks, then lock just those rows by primary key, checking again that they
    are still candidates (InnoDB would otherwise lock every index record the ordered
    scan passes over), and set the admitted ones ``RUNNING`` by id. After a claim lost
    candidates to another worker, the next ones read more than they want
    (:class:`~django_sqlqueue.db.candidate_window.CandidateWindow`).

    Each locked row also brings the database's time, which becomes the attempt's
    start; the rows are read raw and made into jobs as the other databases' are."""
    connection = connections[candidates.using]
    made = engine(connection).made(_CandidateStatements, candidates.model).of(candidates, kept=plain)
    if made is None:
        return ClaimedJobs([], 0)
    statement = engine(connection).made(_ClaimUpdate, candidates.model)
    window = engine(connection).made(CandidateWindow, candidates.model)
    with connection.cursor() as cursor:
        cursor.execute(f"{made.ready} LIMIT %s", (*made.ready_params, limit * window.per_job))
        ids = [pk for (pk,) in cursor.fetchall()]
    if not ids:
        return ClaimedJobs([], 0)
    locked = statement.lock(made, ids, limit)
    position = {pk: index for index, pk in enumerate(ids)}
    started_at = locked[0][-1] if locked else None
    jobs = statement.rows.jobs(statement.as_claimed(locked, worker_id))
    lost = window.lost(ids, [job.pk for job in jobs], limit)
    jobs.sort(key=lambda job: position[job.pk])
    # Jobs over their limits stay READY; their locks go with the commit.
    jobs = admitted(jobs)
    if jobs:
        statement.mark(worker_id, started_at, [job.pk for job in jobs])
    return ClaimedJobs(jobs, lost)


class _ClaimUpdate:
    """``UPDATE`` jobs to ``RUNNING`` for a worker, started at the database's time with
    the attempt counted, ``RETURNING`` them (SQLite and PostgreSQL); on MySQL/MariaDB,
    which cannot return them, lock and read them first (:meth:`lock`), then :meth:`mark`.

    PostgreSQL locks only the claimed rows, and they come back with the statement.
    SQLite's statement holds the write lock of the whole database, which the other
    claimers wait for: it returns only the ids, and the rows are read after it commits
    (in WAL a read neither waits for a writer nor holds one up). Returning every column
    there held the lock longer: two processes drained 13,400 jobs/s against 16,200 with
    the second read (medians of four rounds).

    Made once for each connection (by its engine); the worker is a parameter."""

    def __init__(self, model: type[AbstractJob], connection: BaseDatabaseWrapper) -> None:
        self.rows = engine(connection).made(JobRows, model)
        self._connection = connection
        self._query = query = model._base_manager.all().query
        self._compiler = query.get_compiler(connection=connection)
        now_sql, now_params = self._compiler.compile(DatabaseNow().resolve_expression(query))
        self._table = connection.ops.quote_name(model._meta.db_table)
        self._id = connection.ops.quote_name(cast(str, model._meta.pk.column))
        self._setting = self._claiming(started_at=now_sql)
        self._marking = self._claiming(started_at="%s")
        self._now_sql = now_sql
        self._now_params = tuple(now_params)
        #: Where a row of :attr:`rows` holds what a claim changes.
        self._claimed = [self.rows.attnames.index(name) for name in CLAIMED]
        self._ids_only = connection.vendor == "sqlite"

    def _claiming(self, *, started_at: str) -> str:
        """The ``UPDATE`` that claims jobs for a worker (its one parameter, ``worker``),
        started at ``started_at`` (SQL), the attempt counted, without its condition: the
        columns of ``claim`` (``written`` refuses any other set)."""
        qn = self._connection.ops.quote_name
        setting = written(CLAIM, worker="%s", started_at=started_at, attempts=f"{qn('attempts')} + 1")
        setting["status"] = f"'{CLAIM.status.value}'"
        return f"UPDATE {self._table} SET {', '.join(f'{qn(column)} = {sql}' for column, sql in setting.items())}"

    def run(self, worker_id: str, where: str, params: Iterable[Any], *, pinned: bool = False) -> list[tuple[Any, ...]]:
        """What the statement returns of the jobs matching ``where`` (SQL with ``params``),
        now claimed for ``worker_id``: a row each, for :meth:`jobs`. ``pinned``: sent
        after :data:`WALK_THE_INDEX` in one query (PostgreSQL, client-side binding, no
        transaction open), which then runs as one transaction."""
        returning = "id" if self._ids_only else self.rows.columns
        setting = (worker_id, *self._now_params)
        pin = f"{WALK_THE_INDEX}; " if pinned else ""
        with self._connection.cursor() as cursor:
            cursor.execute(f"{pin}{self._setting} WHERE {where} RETURNING {returning}", (*setting, *params))
            if pinned:
                cursor.nextset()  # past the SET's result, to the claim's
            return list(cursor.fetchall())

    def lock(self, candidates: CandidateSQL, ids: Iterable[int], limit: int) -> list[tuple[Any, ...]]:
        """The rows (all of :attr:`rows`' columns, then the database's time) of the first
        ``limit`` jobs by id among ``ids`` that are still ``candidates``, locked, skipping
        those another claimer locked first. By id, the order of the primary key the rows
        are locked through: the scan stops at ``limit`` rows, and locks no more."""
        where, params = self.by_id(ids)
        with self._connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {self.rows.columns}, {self._now_sql} FROM {self._table}"
                f" WHERE ({candidates.where}) AND {where} ORDER BY {self._id} LIMIT %s FOR UPDATE SKIP LOCKED",
                (*self._now_params, *candidates.where_params, *params, limit),
            )
            return list(cursor.fetchall())

    def as_claimed(self, locked: list[tuple[Any, ...]], worker_id: str) -> list[list[Any]]:
        """The ``locked`` rows as :meth:`mark` leaves them: ``RUNNING`` for ``worker_id``,
        started at the time read with them, the attempt counted."""
        status, worker, started_at, attempts = self._claimed
        claimed = []
        for row in locked:
            values = list(row[:-1])
            values[status], values[worker], values[started_at] = CLAIM.status.value, worker_id, row[-1]
            values[attempts] += 1
            claimed.append(values)
        return claimed

    def mark(self, worker_id: str, started_at: Any, ids: Iterable[int]) -> None:
        """Claim the locked jobs ``ids`` for ``worker_id``, started at ``started_at`` (as
        :meth:`lock` read it)."""
        where, params = self.by_id(ids)
        with self._connection.cursor() as cursor:
            cursor.execute(f"{self._marking} WHERE {where}", (worker_id, started_at, *params))

    def by_id(self, ids: Iterable[int]) -> tuple[str, tuple[Any, ...]]:
        """The condition on the jobs ``ids`` (not empty), as SQL and its parameters."""
        sql, params = self._compiler.compile(PrimaryKeyIn(ids).resolve_expression(self._query))
        return sql, tuple(params)

    def jobs(self, returned: list[tuple[Any, ...]]) -> list[AbstractJob]:
        """The claimed jobs of what :meth:`run` returned (call it once the claim committed)."""
        if not self._ids_only:
            return self.rows.jobs(returned)
        if not returned:
            return []
        where, params = self.by_id(pk for (pk,) in returned)
        with self._connection.cursor() as cursor:
            cursor.execute(f"SELECT {self.rows.columns} FROM {self._table} WHERE {where}", params)
            return self.rows.jobs(cursor.fetchall())


#: Each connection's :class:`~django_sqlqueue.db.candidate_window.CandidateWindow`: its claimer's own.


#: The columns a claim changes (``claim``'s), in the order :meth:`_ClaimUpdate.as_claimed` names them.
CLAIMED = ("status", "worker", "started_at", "attempts")

#: Each connection's :class:`_ClaimUpdate`, compiled once.


def _in_claim_order(model: type[AbstractJob], jobs: list[AbstractJob]) -> list[AbstractJob]:
    """``jobs`` sorted as :data:`CLAIM_ORDER` sorts their rows: one stable sort per
    field, the last field first."""
    for name in reversed(CLAIM_ORDER):
        field = name.removeprefix("-")
        attname = model._meta.get_field(field).attname  # type: ignore[union-attr]
        jobs.sort(key=attrgetter(attname), reverse=name != field)
    return jobs
