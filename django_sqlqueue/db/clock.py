"""The database's clock, read the way Django stores datetimes.

Every claim, schedule and retry compares against this one clock so that workers on
machines whose clocks disagree still agree on what is due."""

from __future__ import annotations

import datetime
from typing import Any

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import DurationField, Value
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Now
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
