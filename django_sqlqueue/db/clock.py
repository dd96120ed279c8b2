"""The database's clock, read the way Django stores datetimes.

Every claim, schedule and retry compares against this one clock so that workers on
machines whose clocks disagree still agree on what is due."""

from __future__ import annotations

import datetime
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import DateTimeField, DurationField, Func, Value
from django.db.models.expressions import CombinedExpression, DatabaseDefault
from django.db.models.sql import Query
from django.db.models.sql.compiler import SQLCompiler

from django_sqlqueue.db.engines import engine


class DatabaseNow(Func):
    """``Now()`` that matches stored values on every backend: the SQL of the connection's
    engine (``Engine.clock``).

    PostgreSQL stores instants, and Django sets each connection's ``TimeZone``, so its
    clock needs nothing. MySQL/MariaDB and SQLite store a wall-clock time in the
    connection's time zone (``connection.timezone_name``: UTC under ``USE_TZ`` unless the
    database's ``TIME_ZONE`` says otherwise, ``TIME_ZONE`` without ``USE_TZ``), while
    MySQL's ``CURRENT_TIMESTAMP`` is the server's *session* time zone and SQLite's
    ``'now'`` is UTC: the clock is the database's UTC time moved by that zone's offset
    (``engines.zones.local_clock``), with no time zone tables on the server.

    The queue names it in every row it writes rather than leave a column to its
    ``db_default``: MySQL fills an omitted column from the table's ``DEFAULT``, which
    the migration compiled under the settings of its day."""

    output_field = DateTimeField()

    def as_sql(
        self,
        compiler: SQLCompiler,
        connection: BaseDatabaseWrapper,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> Any:
        # A statement written without the ORM may be compiled with ``django.db.connection``,
        # the proxy of this thread's default connection: its engine is that connection's.
        if not isinstance(connection, BaseDatabaseWrapper):
            connection = connections[connection.alias]
        return engine(connection).clock(), []


class DatabaseNowPlus(CombinedExpression):
    """The database's now plus ``delay``: when a delayed job is due. The delay is kept
    so that a writer can bind it as a value (PostgreSQL's bulk insert does)."""

    def __init__(self, delay: datetime.timedelta) -> None:
        super().__init__(DatabaseNow(), self.ADD, Value(delay, output_field=DurationField()))
        self.delay = delay


def time_at(value: Any, now: datetime.datetime) -> Any:
    """A new job's ``run_at`` or ``expires_at`` as a value, for a writer that read the
    database's ``now`` first: ``now`` for the column's default, ``now`` plus a
    :class:`DatabaseNowPlus`'s delay, or the time (or None) it holds."""
    if isinstance(value, DatabaseDefault):
        return now
    if isinstance(value, DatabaseNowPlus):
        return now + value.delay
    return value


def _compiled_now(connection: BaseDatabaseWrapper) -> tuple[DatabaseNow, str, list[Any]]:
    query = Query(None)
    now = DatabaseNow(output_field=DateTimeField()).resolve_expression(query)
    sql, params = query.get_compiler(connection=connection).compile(now)
    return now, sql, list(params)


def clock_sql(connection: BaseDatabaseWrapper) -> str:
    """:class:`DatabaseNow` as SQL for ``connection``, as Django passes it to the driver
    (``%`` doubled), for statements written without the ORM (the benchmark's ceilings).
    It takes no parameters on any backend."""
    return _compiled_now(connection)[1]


def database_now(alias: str) -> datetime.datetime:
    """The database's time, read alone (a query over a table has no row to carry it when
    the table is empty), and converted as Django converts a stored datetime."""
    connection = connections[alias]
    now, sql, params = _compiled_now(connection)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {sql}", params)
        (value,) = cursor.fetchone()
    for converter in [*connection.ops.get_db_converters(now), *now.get_db_converters(connection)]:
        value = converter(value, now, connection)
    return value  # type: ignore[no-any-return]
