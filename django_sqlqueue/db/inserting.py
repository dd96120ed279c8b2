"""Writing new jobs: one multi-row ``INSERT`` per chunk, for ``enqueue`` and ``enqueue_many``;
plain rows for ``enqueue_rows``, by ``COPY`` on PostgreSQL.

A job is written with a handful of values (its task, arguments and options); the
rest of the row is the same for every new job. ``Model.save()`` and ``bulk_create()``
would prepare every column of every row through its field, which costs several
times what the database spends on the row. Here only the values that vary are bound,
JSON is encoded once, and the database's clock fills ``enqueued_at`` and, unless the
job says otherwise, ``run_at``."""

from __future__ import annotations

import datetime
import functools
import itertools
import json
import operator
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from django.db import connections
from django.db.models import Field
from django.db.models.expressions import DatabaseDefault

from django_sqlqueue.db.clock import DatabaseNow, DatabaseNowPlus, database_now, time_at
from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.engines.base import CopyRequest, MarkedInsert
from django_sqlqueue.db.instances import saved
from django_sqlqueue.db.schema.indexes import ActiveKeyConstraint
from django_sqlqueue.db.wakeup import wake_on_commit
from django_sqlqueue.rules.lifecycle import ENQUEUE

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.models.sql.compiler import SQLCompiler

    # The table, not the model: the model holds the manager, which calls this module.
    from django_sqlqueue.db.schema.table import AbstractJob, JobT

#: The values each job brings, in column order, each with its PostgreSQL type (a bulk
#: insert there binds a column as one array). A row is these, then ``run_at``, then
#: the columns of :func:`_same_for_all`. The fields' attribute names are their columns.
_BOUND = {
    "queue": "text",
    "task": "text",
    "args": "jsonb",
    "kwargs": "jsonb",
    "priority": "int",
    "max_attempts": "int",
    "timeout": "float8",
    "concurrency_key": "text",
    "concurrency_limit": "int",
    "unique_key": "text",
    "unique_until_pruned": "bool",
    "meta": "jsonb",
    "batch_id": "int8",
}
#: The times each job brings after its bound values, each as SQL (a time it was given,
#: or the database's now plus a delay; ``run_at`` also the database's now alone).
_TIMED = ("run_at", "expires_at")
#: What the database computed, read back with the ids where the database can.
_RETURNED = ("id", "run_at", "enqueued_at")


class JobInserts:
    """What every ``INSERT`` of new jobs into ``model``'s table on ``connection`` shares:
    made once per connection (by its engine), as compiling it anew cost each single
    enqueue more than the rest of its Python."""

    def __init__(self, model: type[AbstractJob], connection: BaseDatabaseWrapper) -> None:
        self.compiler = model._base_manager.using(connection.alias).all().query.get_compiler(connection=connection)
        ways = engine(connection)
        #: The engine's :attr:`~django_sqlqueue.db.engines.base.Engine.returns_rows` and
        #: :attr:`~django_sqlqueue.db.engines.base.Engine.most_params`, which the
        #: connection's database settles once.
        self.returns_rows = ways.returns_rows
        self.most_params = ways.most_params
        self.now, now_params = _compile(self.compiler, DatabaseNow())
        if now_params:
            raise AssertionError("the database's clock takes no parameters")
        qn = connection.ops.quote_name
        self.table = qn(model._meta.db_table)
        same_for_all = _same_for_all(self.now)
        #: ``INSERT INTO table (columns) ``: the bound values, the times, then the constants.
        self.head = _head(self.table, same_for_all, qn)
        #: The same, with the insert's token (:meth:`~django_sqlqueue.db.engines.base.Engine.marks_new_rows`) last.
        self.marked_head = _head(self.table, _same_for_all(self.now, ""), qn)
        self.constants = ", ".join(same_for_all.values())
        #: The unique index on the jobs' keys, which a marked insert reads its rows through.
        self.key_index = next(c for c in model._meta.constraints if isinstance(c, ActiveKeyConstraint))
        #: For each list of columns read back: the columns, quoted, and their reader.
        self.returned: dict[tuple[str, ...], tuple[str, Callable[[Sequence[Any]], dict[str, Any]]]] = {
            returned: (", ".join(map(qn, returned)), _reader(connection, model, returned))
            for returned in (("id",), _RETURNED, (*_RETURNED, "unique_key"))
        }

    @functools.cached_property
    def most_bytes(self) -> int | None:
        """The most bytes of values one statement carries, or None (the engine's
        :meth:`~django_sqlqueue.db.engines.base.Engine.most_statement_bytes`): read
        from the server when many rows are first written."""
        return engine(self.compiler.connection).most_statement_bytes()


def insert(jobs: Sequence[JobT], using: str, batch_size: int) -> list[JobT]:
    """Write ``jobs`` (built, validated, unsaved) on ``using``'s connection, in the
    caller's transaction; set their ids where the database returns them (every one
    for one row, all but MySQL for many) and their times (the database's).

    A job whose ``unique_key`` an active job holds is not written (the database's
    unique index decides, waiting for a transaction that wrote a holder and has not
    ended): those come back, unsaved. ``jobs`` must not share a key."""
    connection = connections[using]
    model = type(jobs[0])
    ways = engine(connection)
    parts = ways.made(JobInserts, model)
    compiler, now, head = parts.compiler, parts.now, parts.head
    keyed = any(job.unique_key is not None for job in jobs)
    # Where the engine cannot tell which rows an INSERT wrote (see marks_new_rows), its
    # statements write a token of this call's with them, by which the engine tells them
    # (no two of them share a key, so none meets another's row as a holder); tagged jobs
    # need their ids for their tags, and jobs enqueued after= others for their links.
    identified = len(jobs) > 1 and any(job.new_tags or job.after for job in jobs)
    # Neither keyed nor identified (every plain enqueue): no engine marks them.
    marks = (keyed or identified) and ways.marks_new_rows(keyed, identified)
    token = uuid.uuid4().hex if marks else None
    if token is not None:
        head = parts.marked_head
        constants = ", ".join(_same_for_all(now, token).values())
    else:
        constants = parts.constants
    returned: tuple[str, ...] = (*_RETURNED, "unique_key") if keyed or token else _RETURNED
    if ways.copies and len(jobs) > 1 and not keyed:
        copied = ways.copy_jobs(CopyRequest(jobs, parts.table, now, tuple(_BOUND), map(_bound, jobs), time_at))
        for job, written in zip(jobs, copied, strict=True):
            saved(job, using, written)
        wake_on_commit(using, {job.queue for job in jobs})
        return []
    # Many jobs, each written: the database's now read first, as COPY does, makes every
    # time a value, known before the INSERT, so only the ids come back (none where the
    # database returns no rows). Converting three returned columns a row cost the client
    # more than the database spent on the row.
    times: list[tuple[Any, ...]] = []
    enqueued_at: Any = None
    at_now: tuple[str, Sequence[Any]] | None = None
    if len(jobs) > 1 and not keyed and not token:
        enqueued_at = database_now(using)
        # A time the database's clock gave, as Django stores one: no quote in it.
        stamp = connection.ops.adapt_datetimefield_value(enqueued_at)
        constants = ", ".join(_same_for_all(f"'{stamp}'").values())
        at_now = ("%s", (stamp,))
        times = [(time_at(job.run_at, enqueued_at), time_at(job.expires_at, enqueued_at)) for job in jobs]
        returned = ("id",)
    names, read = parts.returned[returned]
    tail = f" RETURNING {names}" if parts.returns_rows else ""
    conflict = ways.skip_conflicts if keyed else ""
    # One job (every enqueue) as a plain VALUES row: PostgreSQL plans UNNEST's arrays and
    # casts for each statement, which made a single enqueue markedly slower.
    if ways.unnests and len(jobs) > 1:
        statements = _unnest(jobs, batch_size, compiler, now, constants)
    else:
        # Tuples of strings and numbers, which the garbage collector stops tracking: the
        # rows of a large enqueue_many live until their statement runs.
        timed = times or [tuple([getattr(job, name) for name in _TIMED]) for job in jobs]
        # Most jobs are due at the database's now, read once: converted once, not a job.
        rows = [
            (
                _bound(job),
                tuple(
                    [
                        _NO_TIME
                        if time is None
                        else at_now
                        if at_now and time is enqueued_at
                        else _run_at(compiler, time, now)
                        for time in pair
                    ]
                ),
            )
            for job, pair in zip(jobs, timed, strict=True)
        ]
        statements = (
            (jobs[start:end], sql, params)
            for start, end, sql, params in _values(
                rows, batch_size, parts, constants, parts.most_bytes if len(rows) > 1 else None
            )
        )
    skipped: list[JobT] = []
    known = iter(times)
    with connection.cursor() as cursor:
        for chunk, sql, params in statements:
            if token is not None:
                keys = [job.unique_key for job in chunk]
                marked = MarkedInsert(head + sql + conflict, params, parts.table, names, token, keys, parts.key_index)
                found = ways.insert_marked(cursor, marked)
                skipped += _match(chunk, using, [read(row) for row in found])
                continue
            cursor.execute(head + sql + conflict + tail, params)
            if keyed and tail:
                skipped += _match(chunk, using, [read(row) for row in cursor.fetchall()])
            elif times:
                ids = [pk for (pk,) in cursor.fetchall()] if tail else [None] * len(chunk)
                for job, pk, (run_at, expires_at) in zip(chunk, ids, itertools.islice(known, len(chunk)), strict=True):
                    # Every time is a value here: none is left to load.
                    written = {"id": pk, "run_at": run_at, "expires_at": expires_at, "enqueued_at": enqueued_at}
                    saved(job, using, written)
            elif tail:
                for job, row in zip(chunk, cursor.fetchall(), strict=True):
                    _saved(job, using, read(row))
            elif len(chunk) == 1:  # no RETURNING (MySQL), but the id of one row
                _saved(chunk[0], using, {"id": connection.ops.last_insert_id(cursor, model._meta.db_table, "id")})
            else:
                for job in chunk:
                    _saved(job, using, {})
    wake_on_commit(using, {job.queue for job in jobs})
    return skipped


def row_values(
    template: AbstractJob, args: list[Any], kwargs: dict[str, Any], key: str | None, limit: int | None
) -> tuple[Any, ...]:
    """The bound values (in :data:`_BOUND`'s order) of a job like ``template`` (its
    task's, with every option set and no unique key) with these arguments and
    concurrency slot, for :func:`insert_rows`."""
    args_json, kwargs_json = json.dumps(args), json.dumps(kwargs)
    return (
        template.queue,
        template.task,
        args_json,
        kwargs_json,
        template.priority,
        template.max_attempts,
        template.timeout,
        key,
        limit,
        None,
        False,
        json.dumps(template.meta),
        None,  # enqueue_rows writes no batch
    )


def insert_rows(
    model: type[AbstractJob], rows: Iterable[tuple[Any, ...]], using: str, template: AbstractJob, batch_size: int
) -> int:
    """Write ``rows`` (each a :func:`row_values`), every one first due at ``template``'s
    ``run_at`` and expiring at its ``expires_at`` (as a built job holds them: the
    database's now, a time, or now plus a delay; no expiry), on ``using``'s
    connection in the caller's transaction, as they come; nothing is read back.
    Returns how many were written.

    Where the engine :attr:`~django_sqlqueue.db.engines.base.Engine.copies`
    (PostgreSQL) they go by ``COPY``, faster than the benchmark's raw
    multi-row INSERTs; elsewhere as multi-row INSERTs of ``batch_size`` rows."""
    connection = connections[using]
    ways = engine(connection)
    parts = ways.made(JobInserts, model)
    if ways.copies:
        return ways.copy_rows(parts.table, tuple(_BOUND), rows, _due(template, using))
    when = [_run_at(parts.compiler, getattr(template, name), parts.now) for name in _TIMED]
    written = 0
    queues: set[str] = set()
    rows = iter(rows)
    with connection.cursor() as cursor:
        while chunk := [(row, when) for row in itertools.islice(rows, batch_size)]:
            for start, end, sql, params in _values(chunk, batch_size, parts, parts.constants, parts.most_bytes):
                cursor.execute(parts.head + sql, params)
                written += end - start
            queues.update(row[0] for row, _ in chunk)
    wake_on_commit(using, queues)
    return written


def _match(chunk: Sequence[JobT], using: str, written: list[dict[str, Any]]) -> list[JobT]:
    """Give the written rows (in insertion order) to their jobs; return the others."""
    by_key = {row["unique_key"]: row for row in written if row["unique_key"] is not None}
    keyless = iter([row for row in written if row["unique_key"] is None])
    skipped = []
    for job in chunk:
        row = next(keyless) if job.unique_key is None else by_key.get(job.unique_key)
        if row is None:
            skipped.append(job)
        else:
            _saved(job, using, row)
    return skipped


def _same_for_all(now: str, token: str | None = None) -> dict[str, str]:
    """The columns every new job of one insert starts with the same value in, as SQL:
    its token last, where it has one (a hex string, safe to write in)."""
    same = {
        "enqueued_at": now,
        "status": f"'{ENQUEUE.status.value}'",
        "attempts": "0",
        "worker": "''",
        "errors": "'[]'",
    }
    if token is not None:
        same["insert_token"] = f"'{token}'"
    return same


def _head(table: str, same_for_all: dict[str, str], quote: Callable[[str], str]) -> str:
    """``INSERT INTO table (columns) ``: the bound values, the times, then ``same_for_all``'s."""
    return f"INSERT INTO {table} ({', '.join(quote(name) for name in (*_BOUND, *_TIMED, *same_for_all))}) "


Statements = Iterator[tuple[Sequence["JobT"], str, list[Any] | None]]


def _values(
    rows: Sequence[tuple[Sequence[Any], Sequence[tuple[str, Sequence[Any]]]]],
    batch_size: int,
    parts: JobInserts,
    constants: str,
    most_bytes: int | None,
) -> Iterator[tuple[int, int, str, list[Any] | None]]:
    """``VALUES (…), (…)``: each row's bound values (see :data:`_BOUND`), then its
    times (:data:`_TIMED`) as SQL with their parameters; yields each statement with the
    range of ``rows`` it writes. Where the engine writes the values into the
    statement's text (MySQL/MariaDB, :meth:`~django_sqlqueue.db.engines.base.Engine.literal_rows`),
    the statement goes with no parameters, and where statements are cut is known
    before the first goes: a row too large for any (``most_bytes``) is refused with
    nothing written. One row is bound as any other database's: the driver writes it
    into the same text, and no statement is cut."""
    # A time binds one value at most: the time, or a delay.
    most_params = parts.most_params
    per_row = len(_BOUND) + len(_TIMED)
    rows_per_insert = batch_size if most_params is None else min(batch_size, most_params // per_row)
    texts = engine(parts.compiler.connection).literal_rows(rows, constants) if len(rows) > 1 else None
    if most_bytes is None or texts is None:
        starts = list(range(0, len(rows), rows_per_insert))
    else:
        tasks = [values[_TASK_POSITION] for values, _ in rows]
        starts = engine(parts.compiler.connection).statement_starts(texts, rows_per_insert, most_bytes, tasks)
    marks = ", ".join("%s" for _ in _BOUND)
    for start, end in itertools.pairwise([*starts, len(rows)]):
        if texts is not None:
            yield start, end, "VALUES " + ", ".join(texts[start:end]), None
            continue
        sql: list[str] = []
        params: list[Any] = []
        for values, times in rows[start:end]:
            sql.append(f"({marks}, {', '.join(time for time, _ in times)}, {constants})")
            params += values
            for _, time_params in times:
                params += time_params
        yield start, end, "VALUES " + ", ".join(sql), params


def _unnest(jobs: Sequence[JobT], batch_size: int, compiler: SQLCompiler, now: str, constants: str) -> Statements[JobT]:
    """PostgreSQL: ``SELECT … FROM UNNEST(%s, …)``, one array a column. The statement's
    text is the same for every chunk, so psycopg does not parse a new one with
    thousands of placeholders each time, a large part of the client's time a row."""
    # JSON travels as text and becomes jsonb in the SELECT.
    arrays = ", ".join(f"%s::{'text' if kind == 'jsonb' else kind}[]" for kind in _BOUND.values())
    values = ", ".join(f"u.{name}::{kind}" if kind == "jsonb" else f"u.{name}" for name, kind in _BOUND.items())
    select = (
        f"SELECT {values}, COALESCE(u.run_at, {now} + u.delay, {now}), "
        f"COALESCE(u.expires_at, {now} + u.expires_in), {constants} "
        f"FROM UNNEST({arrays}, %s::timestamptz[], %s::interval[], %s::timestamptz[], %s::interval[]) "
        f"AS u({', '.join(_BOUND)}, run_at, delay, expires_at, expires_in)"
    )
    adapt = compiler.connection.ops.adapt_datetimefield_value
    for start in range(0, len(jobs), batch_size):
        chunk = jobs[start : start + batch_size]
        columns: list[list[Any]] = [list(column) for column in zip(*map(_bound, chunk), strict=True)]
        for name in _TIMED:
            times = [getattr(job, name) for job in chunk]
            columns.append([adapt(time) if isinstance(time, datetime.datetime) else None for time in times])
            columns.append([time.delay if isinstance(time, DatabaseNowPlus) else None for time in times])
        yield chunk, select, columns


_bound_attributes = operator.attrgetter(*_BOUND)
_JSON_POSITIONS = [position for position, kind in enumerate(_BOUND.values()) if kind == "jsonb"]
_TASK_POSITION = list(_BOUND).index("task")


def _due(template: AbstractJob, using: str) -> dict[str, Any]:
    """A template's ``run_at`` and ``expires_at`` for ``COPY``, which binds values: a
    delay after the database's now made a time (the now read once), a column's default
    left as it is."""
    times = {name: getattr(template, name) for name in _TIMED}
    if any(isinstance(value, DatabaseNowPlus) for value in times.values()):
        now = database_now(using)
        times = {
            name: now + value.delay if isinstance(value, DatabaseNowPlus) else value for name, value in times.items()
        }
    return times


def _bound(job: AbstractJob) -> tuple[Any, ...]:
    """``job``'s bound values, in :data:`_BOUND`'s order, its JSON encoded."""
    values = list(_bound_attributes(job))
    for position in _JSON_POSITIONS:
        value = values[position]
        # No arguments and no meta, as most jobs have, without the encoder's machinery.
        values[position] = _EMPTY_JSON[type(value)] if not value and type(value) in _EMPTY_JSON else json.dumps(value)
    return tuple(values)


_EMPTY_JSON: dict[type, str] = {list: "[]", tuple: "[]", dict: "{}"}


def _compile(compiler: SQLCompiler, expression: Any) -> tuple[str, list[Any]]:
    sql, params = compiler.compile(expression.resolve_expression(compiler.query))
    return sql, list(params)


#: A time of none (most jobs' ``expires_at``) as SQL.
_NO_TIME: tuple[str, Sequence[Any]] = ("NULL", ())


def _run_at(compiler: SQLCompiler, run_at: Any, now: str) -> tuple[str, Sequence[Any]]:
    """The SQL for a job's ``run_at`` (or ``expires_at``): the database's now, a time it
    was given, none (most jobs' ``expires_at``), or the database's now plus a delay."""
    if run_at is None:
        return _NO_TIME
    if isinstance(run_at, DatabaseDefault):
        return now, ()
    if hasattr(run_at, "resolve_expression"):
        return _compile(compiler, run_at)
    return "%s", (compiler.connection.ops.adapt_datetimefield_value(run_at),)


def _reader(
    connection: BaseDatabaseWrapper, model: type[AbstractJob], returned: Sequence[str]
) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """How a returned row becomes the job's values (SQLite returns times as text)."""
    steps = []
    for name in returned:
        field = cast("Field[Any, Any]", model._meta.get_field(name))
        column = field.get_col(model._meta.db_table)
        steps.append((name, column, [*connection.ops.get_db_converters(column), *field.get_db_converters(connection)]))

    def read(row: Sequence[Any]) -> dict[str, Any]:
        values = {}
        for (name, column, converters), value in zip(steps, row, strict=True):
            for convert in converters:
                value = convert(value, column, connection)
            values[name] = value
        return values

    return read


def _saved(job: AbstractJob, using: str, returned: dict[str, Any]) -> None:
    """Make ``job`` look as ``save()`` leaves it; times the database did not return are
    loaded on first access."""
    saved(job, using, returned)
    values = job.__dict__
    for name in _DATABASE_TIMES.difference(returned):
        if hasattr(values.get(name), "resolve_expression"):
            del values[name]


#: The times of a new job's row the database may have worked out.
_DATABASE_TIMES = frozenset(("run_at", "enqueued_at", "expires_at"))
