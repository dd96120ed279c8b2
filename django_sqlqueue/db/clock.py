"""The database's clock, read the way Django stores datetimes.

Every claim, schedule and retry compares against this one clock so that workers on
machines whose clocks disagree still agree on what is due."""

from __future__ import annotations

import datetime
import functools
from typing import Any
from zoneinfo import ZoneInfo

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import DateTimeField, DurationField, Value
from django.db.models.expressions import CombinedExpression, DatabaseDefault
from django.db.models.functions import Now
from django.db.models.sql import Query
from django.db.models.sql.compiler import SQLCompiler


class DatabaseNow(Now):
    """``Now()`` that matches stored values on every backend.

    PostgreSQL stores instants, and Django sets each connection's ``TimeZone``, so its
    clock needs nothing. MySQL/MariaDB and SQLite store a wall-clock time in the
    connection's time zone (``connection.timezone_name``: UTC under ``USE_TZ`` unless the
    database's ``TIME_ZONE`` says otherwise, ``TIME_ZONE`` without ``USE_TZ``), while
    MySQL's ``CURRENT_TIMESTAMP`` is the server's *session* time zone and SQLite's
    ``'now'`` is UTC: the clock is the database's UTC time moved by that zone's offset
    (:func:`local_clock`), with no time zone tables on the server.

    The queue names it in every row it writes rather than leave a column to its
    ``db_default``: MySQL fills an omitted column from the table's ``DEFAULT``, which
    the migration compiled under the settings of its day."""

    def as_mysql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        utc = "UTC_TIMESTAMP(6)"
        offset = local_clock(connection.timezone_name, utc, "'%s'", "%s")
        return (f"({utc} + INTERVAL ({offset}) SECOND)" if offset else utc), []

    def as_sqlite(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        # Doubled: the driver's wrapper turns %% into %.
        utc = "STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'now')"
        offset = local_clock(connection.timezone_name, utc, "'%s.000'", "'%+d seconds'")
        clock = f"STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'now', {offset})" if offset else utc
        # SQLite compares times as text, and Django writes a datetime with six digits of
        # fraction, '%f' has three: a job enqueued with the clock read back from here
        # ('...:00.123000') would not be due to the clock of the same millisecond
        # ('...:00.123'). Padded, both read the same.
        return f"({clock} || '000')", []


#: How far ahead :func:`local_clock` follows a zone's changes of offset: further than
#: a connection lives (the statements made with it are kept while it does).
_YEARS_AHEAD = 10


def local_clock(zone: str, utc: str, instant: str, offset: str) -> str:
    """SQL for ``zone``'s UTC offset now (``instant`` and ``offset`` format a change's
    UTC time and an offset in seconds), by the database's UTC clock ``utc``; "" for UTC.

    A zone without changes from last year to :data:`_YEARS_AHEAD` years on is one
    constant; otherwise a ``CASE`` of its changes, so that a connection's statements
    stay true across daylight saving time."""
    return _local_clock(zone, utc, instant, offset, datetime.datetime.now(datetime.timezone.utc).year)


@functools.lru_cache(maxsize=32)
def _local_clock(zone: str, utc: str, instant: str, offset: str, year: int) -> str:
    first, changes = _offsets(zone, year)
    if not changes:
        return offset % first if first else ""
    whens = " ".join(f"WHEN {utc} < {instant % at} THEN {offset % before}" for at, before, _ in changes)
    return f"CASE {whens} ELSE {offset % changes[-1][2]} END"


def _offsets(zone: str, year: int) -> tuple[int, list[tuple[str, int, int]]]:
    """``zone``'s UTC offset in seconds at the start of ``year - 1``, and its changes
    until :data:`_YEARS_AHEAD` years after ``year``: (UTC time, offset before, after)."""
    info = ZoneInfo(zone)
    day = datetime.timedelta(days=1)

    def offset(moment: datetime.datetime) -> int:
        return int(moment.astimezone(info).utcoffset().total_seconds())  # type: ignore[union-attr]

    moment = datetime.datetime(year - 1, 1, 1, tzinfo=datetime.timezone.utc)
    end = moment.replace(year=year + _YEARS_AHEAD)
    first = before = offset(moment)
    changes = []
    while moment < end:
        if (after := offset(moment + day)) != before:
            # The change is within this day: to the second, by halving.
            low, high = moment, moment + day
            while high - low > datetime.timedelta(seconds=1):
                middle = low + (high - low) / 2
                low, high = (low, middle) if offset(middle) == after else (middle, high)
            changes.append((f"{high:%Y-%m-%d %H:%M:%S}", before, after))
            before = after
        moment += day
    return first, changes


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
