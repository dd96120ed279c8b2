"""PostgreSQL, through psycopg 3: its errors by SQLSTATE, and its dead rows."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from typing import Any, cast

from django.conf import settings
from django.db import OperationalError
from django.db.models import Case, F, Value, When

from django_sqlqueue.db.engines import postgresql_copy
from django_sqlqueue.db.engines.base import Engine, ErrorCodes, dotted, numbers

#: ``Connection.notifies(timeout=, stop_after=)``, which the idle wait uses, came in 3.2.
PSYCOPG_MIN_VERSION = (3, 2)

#: How to let autovacuum clean the jobs table, for the check that finds it cannot.
VACUUM_HINT = (
    "Turn autovacuum on, as PostgreSQL has it by default (autovacuum = on in postgresql.conf, or "
    "ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf();), and leave the jobs table's "
    "autovacuum_enabled alone; or VACUUM the jobs table every minute or so yourself."
)


class PostgreSQL(Engine):
    vendor = "postgresql"
    display = "PostgreSQL"
    # SQLSTATEs, or their first characters for a whole class.
    codes = ErrorCodes(
        # serialization_failure, deadlock_detected, lock_not_available.
        transient=("40001", "40P01", "55P03"),
        # connection_exception, insufficient_resources, system_error, read_only_sql_transaction,
        # query_canceled, admin_shutdown, crash_shutdown, cannot_connect_now, idle_session_timeout.
        away=("08", "53", "58", "25006", "57014", "57P01", "57P02", "57P03", "57P05"),
        # data_exception (invalid JSON, NUL, out of range...), program_limit_exceeded, check_violation.
        unwritable=("22", "54", "23514"),
        # undefined_table, undefined_column.
        unmigrated=("42P01", "42703"),
    )
    # Django takes psycopg 3 over psycopg2 when both are installed.
    driver_hint = "Install psycopg 3.2 or newer: pip install 'django-sqlqueue[postgres]'."

    @classmethod
    def raised(cls, cause: BaseException) -> bool:
        return bool(getattr(cause, "sqlstate", None))

    @classmethod
    def matches(cls, error: BaseException, cause: BaseException, codes: Any) -> bool:
        return str(getattr(cause, "sqlstate", "")).startswith(codes)

    @classmethod
    def lost_connection(cls, error: BaseException) -> bool:
        # psycopg's own connection failures carry no SQLSTATE.
        cause = error.__cause__
        psycopg = type(cause).__module__.startswith("psycopg")
        return isinstance(error, OperationalError) and psycopg and not getattr(cause, "sqlstate", None)

    def driver_problem(self) -> str | None:
        # Django's Database attribute is the driver's DB-API module: psycopg or psycopg2.
        driver = cast(Any, self.connection).Database
        name, version = driver.__name__, numbers(driver.__version__)
        if name != "psycopg" or version < PSYCOPG_MIN_VERSION:
            return (
                f"PostgreSQL database {self.connection.alias!r} uses {name} {driver.__version__}; "
                f"django-sqlqueue needs psycopg {dotted(PSYCOPG_MIN_VERSION)} or newer"
            )
        return None

    def vacuum_problem(self, table: str) -> str | None:
        """Every claim and every finish writes a new version of its row and leaves the
        old one dead, and autovacuum is what removes them (the queue's migration tunes
        it for the table). With it off, on the server or on the table, they pile up and
        every claim wades through them."""
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('autovacuum'), (SELECT reloptions FROM pg_class WHERE oid = to_regclass(%s))",
                [self.connection.ops.quote_name(table)],
            )
            server, options = cursor.fetchone()
        where = f"PostgreSQL database {self.connection.alias!r}"
        piling = "the dead rows every claim and finish leaves"
        if server != "on":
            return f"{where} runs with autovacuum off: {piling} in {table} pile up"
        if "autovacuum_enabled=false" in (options or []):
            return f"{where} has autovacuum_enabled=false on {table}: {piling} pile up"
        return None

    # Inserts: many jobs by COPY or by arrays, batches' ids as one array, times past Python's.

    copies = True
    unnests = True

    def copy_jobs(
        self, jobs: Sequence[Any], table: str, now_sql: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> None:
        postgresql_copy.copy_jobs(jobs, self.connection, table, now_sql, columns, rows)

    def copy_rows(
        self, table: str, columns: Sequence[str], rows: Iterable[tuple[Any, ...]], times: dict[str, Any]
    ) -> int:
        return postgresql_copy.copy_rows(self.connection, table, columns, rows, times)

    def ids_in(self, column: str, ids: list[int]) -> tuple[str, tuple[Any, ...]]:
        # One array parameter, which psycopg adapts at once, rather than one a row.
        if not ids:
            return super().ids_in(column, ids)
        return f"{column} = ANY(%s)", (ids,)

    def readable(self, field: str) -> Any:
        """PostgreSQL's ``timestamp`` columns go on to the year 294276, and an old
        version could write such a ``run_at`` (an offset, a long delay), which the
        driver then fails to read, failing a whole page with it: capped at the last
        time Python holds, such a row is read as that time."""
        last = datetime.datetime.max.replace(tzinfo=datetime.timezone.utc) if settings.USE_TZ else datetime.datetime.max
        return Case(When(**{f"{field}__gt": last}, then=Value(last)), default=F(field))
