"""PostgreSQL, through psycopg 3: its errors by SQLSTATE, and its dead rows."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from typing import Any, cast

from django.conf import settings
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Case, F, Q, QuerySet, Value, When

from django_sqlqueue.db.engines import postgresql_copy, postgresql_notify
from django_sqlqueue.db.engines.base import CopyRequest, Engine, ErrorCodes, Model, ServerConnections, dotted, numbers
from django_sqlqueue.db.engines.claims import ClaimSteps, Returned

#: ``Connection.notifies(timeout=, stop_after=)``, which the idle wait uses, came in 3.2.
PSYCOPG_MIN_VERSION = (3, 2)

#: How to let autovacuum clean the jobs table, for the check that finds it cannot.
VACUUM_HINT = (
    "Turn autovacuum on, as PostgreSQL has it by default (autovacuum = on in postgresql.conf, or "
    "ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf();), and leave the jobs table's "
    "autovacuum_enabled alone; or VACUUM the jobs table every minute or so yourself."
)

#: Makes PostgreSQL walk the ready index in claim order for the rest of its
#: transaction (see :meth:`PostgreSQL.walk_the_index`).
WALK_THE_INDEX = "SET LOCAL enable_sort = off"


class PostgreSQL(Engine):
    vendor = "postgresql"
    display = "PostgreSQL"
    # SQLSTATEs, or their first characters for a whole class.
    codes = ErrorCodes(
        # serialization_failure, deadlock_detected, lock_not_available.
        transient=("40001", "40P01", "55P03"),
        # connection_exception, insufficient_resources, system_error, read_only_sql_transaction,
        # query_canceled, admin_shutdown, crash_shutdown, cannot_connect_now, idle_session_timeout.
        unavailable=("08", "53", "58", "25006", "57014", "57P01", "57P02", "57P03", "57P05"),
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

    # Claims: ``UPDATE … RETURNING`` of ids locked with ``SKIP LOCKED``, walking the ready index.

    def claim(self, claim: ClaimSteps) -> tuple[list[Any], int]:
        """The claim is an ``UPDATE … RETURNING``, its rows made into jobs after it
        commits. A plain claim sets the first ready keyless ids ``RUNNING``, locked
        with ``FOR UPDATE SKIP LOCKED`` as an array read once; when it takes fewer than
        it wanted and keyed jobs wait, or once limits are in play, a second transaction
        locks the first candidates, admits those under their limits and claims them by
        id. ``SKIP LOCKED … LIMIT`` hands each claimer rows nobody holds: none is lost.

        Where an index holds the claim order, the claim walks it
        (:meth:`walk_the_index`), but not in a caller's transaction, which ``SET LOCAL``
        would outlive. One query outside a transaction is atomic by itself, the pin
        sent with it included (:meth:`sends_several`); only a pin sent on its own needs
        a transaction."""
        pinned = claim.index_ordered and not self.connection.in_atomic_block
        pin_with_it = pinned and self.sends_several()

        def claim_keyless(where: str, params: tuple[Any, ...]) -> list[Returned]:
            if pinned and not pin_with_it:
                self.walk_the_index()
            return claim.run(where, params, first=WALK_THE_INDEX if pin_with_it else "")

        def claim_admitted(wanted: int) -> list[Returned]:
            if pinned:
                self.walk_the_index()
            return claim.run_admitted(wanted, lambda ready: ready.select_for_update(skip_locked=True))

        keyless = claim.keyless(lambda ready: f"= ANY(ARRAY({ready} LIMIT %s FOR UPDATE SKIP LOCKED))")
        rows = claim.retry(lambda: claim_keyless(*keyless), atomic=pinned and not pin_with_it) if keyless else []
        if claim.short(rows):
            rows += claim.retry(lambda: claim_admitted(claim.limit - len(rows)))
        return claim.returned(rows), 0

    def walk_the_index(self) -> None:
        """Make PostgreSQL walk the ready index in claim order for the rest of this
        transaction, rather than sort every ready row to take the first ``limit``.

        The planner prefers the sort whenever the table's statistics say few rows are
        ready, and they say so after autovacuum analyzed a queue that had drained
        empty: until it analyzes again, each claim of a fresh backlog read and sorted
        the whole of it. The index walk stops after ``limit`` rows whatever the
        statistics, so it is never the worse plan when an index holds the claim order;
        the sort only pays where one does not (several queues, or a caller's filter),
        and there nothing is pinned."""
        with self.connection.cursor() as cursor:
            cursor.execute(WALK_THE_INDEX)

    def sends_several(self) -> bool:
        """Whether the connection's cursors send several statements in one query:
        psycopg's client-side binding, which Django uses unless ``OPTIONS`` ask for
        ``server_side_binding`` (then each statement goes with its parameters on its own).

        Several statements of one query without ``BEGIN`` run as one transaction: the
        pin (:meth:`walk_the_index`) and the claim then cost one round trip, not four
        with the ``BEGIN`` and ``COMMIT`` of a transaction around them."""
        from psycopg import ClientCursor  # the driver, imported only once it is in use

        self.connection.ensure_connection()
        return issubclass(self.connection.connection.cursor_factory, ClientCursor)

    def finished_first(self, rows: QuerySet[Model], finished: Q) -> QuerySet[Model]:
        """Narrowed to the ``finished`` jobs: the planner reads a partial index only for
        a query whose filter implies the index's condition."""
        return rows.filter(finished)

    # Clock, wake-up, connections and estimates: the statement's time, ``LISTEN``/``NOTIFY``,
    # and the server's and the planner's figures from its catalogs.

    notifies = True
    keeps_value_shares = True
    #: The connection limit this user sees, those open, and whether the user is a
    #: superuser (whose reserved slots are theirs too). ``reserved_connections`` (16+)
    #: reads as NULL where it does not exist; walsenders and background workers have
    #: slots of their own.
    CONNECTIONS_SQL = """
        SELECT current_setting('max_connections')::int,
               current_setting('superuser_reserved_connections')::int
                   + COALESCE(current_setting('reserved_connections', true)::int, 0),
               (SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
               (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')
    """
    #: ``reltuples``, kept by ``ANALYZE`` and autovacuum: -1 for a table never analysed.
    ROWS_SQL = "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)"
    #: The planner's statistics of some columns: each common value and the share of the table it holds.
    SHARES_SQL = """
        SELECT s.attname, s.most_common_vals::text::text[], s.most_common_freqs
        FROM pg_class c
        JOIN pg_stats s ON s.schemaname = c.relnamespace::regnamespace::text AND s.tablename = c.relname
        WHERE c.oid = to_regclass(%s) AND s.attname = ANY(%s)
    """

    def clock(self) -> str:
        """Instants, in the connection's ``TimeZone`` as Django sets it: nothing to
        convert. Not ``CURRENT_TIMESTAMP``, which is the time its transaction began."""
        return "STATEMENT_TIMESTAMP()"

    def notify(self, payload: str) -> None:
        postgresql_notify.notify(self.connection, payload)

    def listening_connection(self, *, finishes: bool = False) -> BaseDatabaseWrapper:
        channel = postgresql_notify.FINISHED_CHANNEL if finishes else postgresql_notify.CHANNEL
        return postgresql_notify.listening_connection(self.connection.alias, channel)

    def announcing_update(self, update: str, pk: str, status: str, finished: Sequence[str]) -> str | None:
        return postgresql_notify.announcing_update(update, pk, status, finished)

    def notify_finished(self, payloads: list[str]) -> None:
        postgresql_notify.notify(self.connection, *payloads, channel=postgresql_notify.FINISHED_CHANNEL)

    def server_connections(self) -> ServerConnections | None:
        """None through a transaction pooler (``DISABLE_SERVER_SIDE_CURSORS``, as Django
        asks for one), whose clients hold no server connection each."""
        if self.connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS"):
            return None
        with self.connection.cursor() as cursor:
            # The activity read once in a transaction is kept until it ends: read it afresh.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(self.CONNECTIONS_SQL)
            limit, reserved, superuser, in_use = cursor.fetchone()
        return ServerConnections(limit if superuser else limit - reserved, in_use)

    def catalog_name(self, table: str) -> str:
        # Looked up by its quoted name, as ``to_regclass`` reads it.
        return self.connection.ops.quote_name(table)

    def value_shares(self, table: str, columns: list[str]) -> dict[str, dict[str, float]]:
        with self.connection.cursor() as cursor:
            cursor.execute(self.SHARES_SQL, [self.catalog_name(table), columns])
            found = cursor.fetchall()
        return {column: dict(zip(values or [], freqs or [], strict=True)) for column, values, freqs in found}

    # Inserts: many jobs by COPY or by arrays, batches' ids as one array, times past Python's.

    copies = True
    unnests = True

    def copy_jobs(self, request: CopyRequest) -> list[dict[str, Any]]:
        return postgresql_copy.copy_jobs(self.connection, request)

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
