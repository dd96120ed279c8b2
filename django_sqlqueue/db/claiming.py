"""Claiming a batch of ready jobs: short transactions, rows locked by primary key,
no worker waiting on another's locks."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Hashable, Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from django.core.exceptions import EmptyResultSet, ImproperlyConfigured
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.db.claim_lock import HostClaimLock
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.engines.claims import CandidateSQL, Returned
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

T = TypeVar("T")


#: The order a claim takes ready jobs in: higher priority first, then the earliest
#: due, then the oldest (``JobQuerySet.in_claim_order`` in the managers).
CLAIM_ORDER = ("-priority", "run_at", "id")


class Candidates(Generic[JobT]):
    """The ready jobs a claim may take, on the database ``using``: ``build()`` makes
    them as a queryset in :data:`CLAIM_ORDER`, only when the claim needs one.

    ``cache_key`` is what they were built from (the queues, those left out), when nothing
    else went in: candidates of one cache key make the same statement, which a connection
    then compiles once (:class:`_CandidateStatements`); None for a caller's filter."""

    def __init__(
        self, model: type[JobT], using: str, build: Callable[[], QuerySet[JobT]], cache_key: Hashable | None
    ) -> None:
        self.model = model
        self.using = using
        self.cache_key = cache_key
        self._build = build

    @functools.cached_property
    def queryset(self) -> QuerySet[JobT]:
        return self._build()


class ClaimedJobs(list[JobT]):
    """The jobs one claim took, in claim order.

    ``lost`` counts candidates another worker locked first, where the database's claim
    reads candidates before it locks them (its engine says how many): when it stays
    above zero there are more workers than work."""

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
    queues, or one, and no other filter): a database whose planner might sort them
    instead is then made to walk that index (its engine's claim says)."""
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
    steps = _Claim(candidates, worker_id, limit, admitted, plain=plain, index_ordered=index_ordered)
    jobs, lost = engine(connection).claim(steps)
    # Made from the rows of ``candidates.model``: instances of it.
    return cast("ClaimedJobs[JobT]", ClaimedJobs(jobs, lost))


def _admitted(candidates: Candidates[Any], limited: Limited, jobs: list[Any]) -> list[Any]:
    """The locked ``jobs`` that fit their concurrency limits, then their rate limits
    (keys' rows are always locked before buckets', so claimers never deadlock)."""
    return draw(candidates.using, admit(candidates.using, candidates.model, jobs), limited)


def _keyed_among(candidates: Candidates[Any], connection: BaseDatabaseWrapper) -> bool:
    """Whether jobs with a concurrency key are among ``candidates``, which a plain
    claim left out: asked through the condition made once for their cache key, as every
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


class _Claim(Generic[JobT]):
    """One claim's steps (:class:`~django_sqlqueue.db.engines.claims.ClaimSteps`),
    which the connection's engine puts together: the statements, compiled once for
    the connection, and the admission of candidates under their limits."""

    def __init__(
        self,
        candidates: Candidates[JobT],
        worker_id: str,
        limit: int,
        admitted: Callable[[list[Any]], list[Any]],
        *,
        plain: bool,
        index_ordered: bool,
    ) -> None:
        self.candidates = candidates
        self.model = candidates.model
        self.using = candidates.using
        self.worker_id = worker_id
        self.limit = limit
        self.plain = plain
        self.index_ordered = index_ordered
        self._admitted = admitted
        self._connection = connections[self.using]
        self._statement = engine(self._connection).made(_ClaimUpdate, self.model)

    def retry(self, work: Callable[[], T], *, atomic: bool = True) -> T:
        return retry_transient(self.using, work, atomic=atomic)

    def sql(self) -> CandidateSQL | None:
        return engine(self._connection).made(_CandidateStatements, self.model).of(self.candidates, kept=self.plain)

    def keyless(self, among: Callable[[str], str]) -> tuple[str, tuple[Any, ...]] | None:
        # Made before the claim's transaction begins: on SQLite that holds the write
        # lock of the whole database, which the other claimers wait for.
        made = self.sql() if self.plain else None
        if made is None:
            return None
        return f"id {among(made.ready)} AND concurrency_key IS NULL", (*made.ready_params, self.limit)

    def run(self, where: str, params: Iterable[Any], *, ids_only: bool = False, first: str = "") -> list[Returned]:
        return self._statement.run(self.worker_id, where, params, ids_only=ids_only, first=first)

    def run_admitted(
        self, wanted: int, locked: Callable[[QuerySet[Any]], QuerySet[Any]], *, ids_only: bool = False
    ) -> list[Returned]:
        ready = self.candidates.queryset.values_list("pk", "task", "concurrency_key", "concurrency_limit", named=True)
        ids = [row.pk for row in self._admitted(list(locked(ready)[:wanted]))]
        return self.run(*self._statement.by_id(ids), ids_only=ids_only) if ids else []

    def short(self, returned: list[Returned]) -> bool:
        if len(returned) >= self.limit:
            return False
        return not self.plain or note_keys(self.using, _keyed_among(self.candidates, self._connection))

    def returned(self, returned: list[Returned], *, ids_only: bool = False) -> list[Any]:
        return _in_claim_order(self.model, self._statement.jobs(returned, ids_only=ids_only))

    def turn(self) -> contextlib.AbstractContextManager[bool]:
        return engine(self._connection).made(HostClaimLock, self.model).locked()

    def candidate_ids(self, candidates: CandidateSQL, limit: int) -> list[int]:
        with self._connection.cursor() as cursor:
            cursor.execute(f"{candidates.ready} LIMIT %s", (*candidates.ready_params, limit))
            return [pk for (pk,) in cursor.fetchall()]

    def lock(self, candidates: CandidateSQL, ids: list[int]) -> tuple[list[Any], Any]:
        locked = self._statement.lock(candidates, ids, self.limit)
        started_at = locked[0][-1] if locked else None
        return self._statement.rows.jobs(self._statement.as_claimed(locked, self.worker_id)), started_at

    def mark(self, jobs: list[Any], started_at: Any) -> list[Any]:
        jobs = self._admitted(jobs)
        if jobs:
            self._statement.mark(self.worker_id, started_at, [job.pk for job in jobs])
        return jobs


class _CandidateStatements:
    """Candidates as SQL (:class:`CandidateSQL`), made once for each cache key of them
    (:attr:`Candidates.cache_key`) while nothing but the cache key went in: building the
    candidates' queryset and compiling it cost each claim more than its statement
    did, and came out the same for every claim of a worker."""

    #: The most cache keys kept; past it they are made again. A worker has one, and one
    #: more for each set of its queues paused at once.
    KEPT = 256

    def __init__(self, model: type[AbstractJob], connection: BaseDatabaseWrapper) -> None:
        self._connection = connection
        self._made: dict[Hashable, CandidateSQL | None] = {}
        #: The jobs table, quoted, for a statement on :attr:`CandidateSQL.where`.
        self.table = connection.ops.quote_name(model._meta.db_table)

    def of(self, candidates: Candidates[Any], *, kept: bool) -> CandidateSQL | None:
        """``candidates`` as SQL, None when nothing can match (``queues=[]``); ``kept``
        for their cache key when only the cache key went in (no limits in play)."""
        cache_key = candidates.cache_key
        if not kept or cache_key is None:
            return self._make(candidates.queryset)
        if cache_key not in self._made:
            if len(self._made) >= self.KEPT:
                self._made.clear()
            self._made[cache_key] = self._make(candidates.queryset)
        return self._made[cache_key]

    def _make(self, candidates: QuerySet[AbstractJob]) -> CandidateSQL | None:
        ids = candidates.values("pk")
        compiler = ids.query.get_compiler(connection=self._connection)
        try:
            ready, ready_params = compiler.as_sql()
            where, where_params = compiler.compile(ids.query.where)
        except EmptyResultSet:
            return None
        return CandidateSQL(ready, tuple(ready_params), where, tuple(where_params))


class _ClaimUpdate:
    """``UPDATE`` jobs to ``RUNNING`` for a worker, started at the database's time with
    the attempt counted, ``RETURNING`` them (:meth:`run`); where the database cannot
    return them, lock and read them first (:meth:`lock`), then :meth:`mark`. Each engine
    says which its claim runs, and whether the rows or only the ids come back.

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

    def _claiming(self, *, started_at: str) -> str:
        """The ``UPDATE`` that claims jobs for a worker (its one parameter, ``worker``),
        started at ``started_at`` (SQL), the attempt counted, without its condition: the
        columns of ``claim`` (``written`` refuses any other set)."""
        qn = self._connection.ops.quote_name
        setting = written(CLAIM, worker="%s", started_at=started_at, attempts=f"{qn('attempts')} + 1")
        setting["status"] = f"'{CLAIM.status.value}'"
        return f"UPDATE {self._table} SET {', '.join(f'{qn(column)} = {sql}' for column, sql in setting.items())}"

    def run(
        self, worker_id: str, where: str, params: Iterable[Any], *, ids_only: bool, first: str = ""
    ) -> list[Returned]:
        """What the statement returns of the jobs matching ``where`` (SQL with ``params``),
        now claimed for ``worker_id``: a row each (or, ``ids_only``, an id), for
        :meth:`jobs`. ``first``: a statement sent before it in one query, whose result
        is skipped (without a transaction open, the query runs as one)."""
        returning = "id" if ids_only else self.rows.columns
        setting = (worker_id, *self._now_params)
        pin = f"{first}; " if first else ""
        with self._connection.cursor() as cursor:
            cursor.execute(f"{pin}{self._setting} WHERE {where} RETURNING {returning}", (*setting, *params))
            if first:
                cursor.nextset()  # past the first statement's result, to the claim's
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

    def jobs(self, returned: list[Returned], *, ids_only: bool) -> list[AbstractJob]:
        """The claimed jobs of what :meth:`run` returned (call it once the claim committed)."""
        if not ids_only:
            return self.rows.jobs(returned)
        if not returned:
            return []
        where, params = self.by_id(pk for (pk,) in returned)
        with self._connection.cursor() as cursor:
            cursor.execute(f"SELECT {self.rows.columns} FROM {self._table} WHERE {where}", params)
            return self.rows.jobs(cursor.fetchall())


#: The columns a claim changes (``claim``'s), in the order :meth:`_ClaimUpdate.as_claimed` names them.
CLAIMED = ("status", "worker", "started_at", "attempts")


def _in_claim_order(model: type[AbstractJob], jobs: list[AbstractJob]) -> list[AbstractJob]:
    """``jobs`` sorted as :data:`CLAIM_ORDER` sorts their rows: one stable sort per
    field, the last field first."""
    for name in reversed(CLAIM_ORDER):
        field = name.removeprefix("-")
        attname = model._meta.get_field(field).attname  # type: ignore[union-attr]
        jobs.sort(key=attrgetter(attname), reverse=name != field)
    return jobs
