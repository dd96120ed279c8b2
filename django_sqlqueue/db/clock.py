"""The database's clock, read the way Django stores datetimes.

Every claim, schedule and retry compares against this one clock so that workers on
machines whose clocks disagree still agree on what is due."""

from __future__ import annotations

import datetime
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import DateTimeField, DurationField, Value
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Now
from django.db.models.sql import Query
from django.db.models.sql.compiler import SQLCompiler


class DatabaseNow(Now):
    """``Now()`` that matches stored values on every backend.

    Django's ``Now()`` on MySQL/MariaDB is ``CURRENT_TIMESTAMP``, the server's
    *session* time zone, while Django stores aware datetimes as UTC: on a server not
    set to UTC every comparison would be off by hours. ``UTC_TIMESTAMP`` is not.
    SQLite's ``'now'`` is UTC; with ``USE_TZ = False`` Django stores local time, so
    ask for local time there."""

    def as_mysql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        if settings.USE_TZ:
            return self.as_sql(compiler, connection, template="UTC_TIMESTAMP(6)", **extra)
        return super().as_mysql(compiler, connection, **extra)

    def as_sqlite(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        if settings.USE_TZ:
            return super().as_sqlite(compiler, connection, **extra)
        return self.as_sql(
            compiler,
            connection,
            template="STRFTIME('%%%%Y-%%%%m-%%%%d %%%%H:%%%%M:%%%%f', 'now', 'localtime')",
            **extra,
        )


class DatabaseNowPlus(CombinedExpression):
    """The database's now plus ``delay``: when a delayed job is due. The delay is kept
    so that a writer can bind it as a value (PostgreSQL's bulk insert does)."""

    def __init__(self, delay: datetime.timedelta) -> None:
        super().__init__(DatabaseNow(), self.ADD, Value(delay, output_field=DurationField()))
        self.delay = delay


def database_now(alias: str) -> datetime.datetime:
    """The database's time, read alone (a query over a table has no row to carry it when
    the table is empty), and converted as Django converts a stored datetime."""
    connection = connections[alias]
    query = Query(None)
    now = DatabaseNow(output_field=DateTimeField()).resolve_expression(query)
    sql, params = query.get_compiler(using=alias).compile(now)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {sql}", params)
        (value,) = cursor.fetchone()
    for converter in [*connection.ops.get_db_converters(now), *now.get_db_converters(connection)]:
        value = converter(value, now, connection)
    return value  # type: ignore[no-any-return]
