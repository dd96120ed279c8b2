"""What each database needs and how each fails, in one place: the errors worth trying
again, those of a database out of reach and those of data it cannot store (each
vendor's codes in one table per kind), the settings a safe claim needs (the checks
report those problems at start-up and the claim refuses to run into them), and the
oldest driver and server versions it runs on."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any, NamedTuple, cast

from django.db import DatabaseError, DataError, InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.exceptions import TablesNotMigrated


class _Codes(NamedTuple):
    """Errors of one kind, as each database names them."""

    #: PostgreSQL SQLSTATEs, or their first characters for a whole class.
    postgresql: tuple[str, ...]
    #: MySQL and MariaDB error numbers.
    mysql: frozenset[int]
    #: Words of SQLite's message (its only detail on Python 3.10).
    sqlite: tuple[str, ...]


#: Deadlocks and lock waits that gave up: the whole transaction may succeed if run again.
_TRANSIENT = _Codes(
    # serialization_failure, deadlock_detected, lock_not_available.
    postgresql=("40001", "40P01", "55P03"),
    # ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT.
    mysql=frozenset({1213, 1205}),
    sqlite=("database is locked", "database table is locked"),
)

#: The connection is gone, or the server cannot write for now (restart, killed
#: connection, shutdown, failover, full disk): wait, reconnect and try again.
_AWAY = _Codes(
    # connection_exception, insufficient_resources, system_error, read_only_sql_transaction,
    # query_canceled, admin_shutdown, crash_shutdown, cannot_connect_now, idle_session_timeout.
    postgresql=("08", "53", "58", "25006", "57014", "57P01", "57P02", "57P03", "57P05"),
    mysql=frozenset(
        {
            *(2002, 2003, 2006, 2013, 2055),  # client: cannot connect, gone away, lost connection
            *(1040, 1053, 1077, 1152, 1158, 1159, 1160, 1161, 1184),  # too many connections, shutdown, network
            *(1927, 4031, 1317, 1969, 3024),  # killed, idle timeout, query interrupted, statement time limits
            *(1290, 1792, 1836),  # read-only (after a failover)
            *(1021, 1114),  # disk or table full
        }
    ),
    sqlite=("disk I/O error", "unable to open database file", "attempt to write a readonly database", "disk is full"),
)

#: This data cannot be written, however often it is tried: too large, out of range,
#: invalid JSON or text. Only the statement that carried it fails.
_UNWRITABLE = _Codes(
    # data_exception (invalid JSON, NUL, out of range...), program_limit_exceeded, check_violation.
    postgresql=("22", "54", "23514"),
    mysql=frozenset(
        {
            1153,  # ER_NET_PACKET_TOO_LARGE: larger than max_allowed_packet
            1301,  # ER_WARN_ALLOWED_PACKET_OVERFLOWED
            *(1264, 1690),  # out of range
            *(1292, 1366, 1367, 1406),  # incorrect or too long a value
            *(3140, 4025, 3819),  # invalid JSON (MySQL), a failed CHECK such as MariaDB's JSON_VALID
        }
    ),
    sqlite=("string or blob too big", "CHECK constraint failed"),
)

#: A table or a column a statement names is not in the database: the migrations that
#: make them were not applied to it.
_UNMIGRATED = _Codes(
    # undefined_table, undefined_column.
    postgresql=("42P01", "42703"),
    # ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR.
    mysql=frozenset({1146, 1054}),
    sqlite=("no such table", "no such column", "has no column named"),
)


def _is(error: BaseException, codes: _Codes) -> bool:
    # Django raises its own exception with the driver's as the cause, except MySQL's
    # IntegrityError, which it raises with the driver's arguments and no cause.
    cause = error.__cause__ or error
    if state := getattr(cause, "sqlstate", None):
        return str(state).startswith(codes.postgresql)
    args = getattr(cause, "args", ())
    if args and isinstance(args[0], int):
        return args[0] in codes.mysql
    return any(words in str(error) for words in codes.sqlite)


def is_transient(error: BaseException) -> bool:
    """Whether a failed statement may succeed if its whole transaction is run again."""
    return _is(error, _TRANSIENT)


def is_away(error: BaseException) -> bool:
    """Whether the database is out of reach or cannot write for now: wait and try again.

    A transient error is one that :func:`~django_sqlqueue.db.transient.retry_transient`
    gave up on. An error that is neither this nor :func:`is_unwritable` (a missing
    table or column, a syntax error) is a bug or a misconfiguration: it should stop a
    worker loudly rather than loop."""
    if isinstance(error, InterfaceError):
        return True
    cause = error.__cause__
    psycopg = type(cause).__module__.startswith("psycopg")
    if isinstance(error, OperationalError) and psycopg and not getattr(cause, "sqlstate", None):
        return True  # psycopg's own connection failures carry no SQLSTATE
    return _is(error, _AWAY) or _is(error, _TRANSIENT)


def is_unwritable(error: BaseException) -> bool:
    """Whether the database refused the data a statement carried: no retry can write it."""
    return isinstance(error, DataError) or _is(error, _UNWRITABLE)


@contextlib.contextmanager
def migrations_needed(using: str) -> Iterator[None]:
    """Say to run ``migrate`` when a statement inside finds a table or a column of the
    queue's missing from ``using``'s database, rather than let the driver's "no such
    table" (or "relation does not exist", or "Table doesn't exist") out alone."""
    try:
        yield
    except DatabaseError as error:
        if not _is(error, _UNMIGRATED):
            raise
        raise TablesNotMigrated(
            f"The queue's tables are missing from the database {using!r}, or older than its migrations "
            f"({_said(error)}): run manage.py migrate."
        ) from error


def _said(error: BaseException) -> str:
    """The database's message alone: without MySQL's error number, and without the
    lines psycopg adds that quote the statement."""
    args: tuple[Any, ...] = getattr(error.__cause__ or error, "args", ())
    text = args[1] if len(args) == 2 and isinstance(args[0], int) else str(error)
    return str(text).strip().split("\n")[0]


MARIADB_MIN_VERSION = (10, 6)
#: ``Connection.notifies(timeout=, stop_after=)``, which the idle wait uses, came in 3.2.
PSYCOPG_MIN_VERSION = (3, 2)
#: ``UPDATE ... RETURNING``, which the claim uses on SQLite, came in 3.35.
SQLITE_MIN_VERSION = (3, 35)


def claim_problem(connection: BaseDatabaseWrapper) -> str | None:
    """Why claiming on this connection's database would be unsafe, or None.

    Needs only the settings, never a query, so it is cheap to ask before every claim."""
    if connection.vendor == "sqlite":
        mode = (connection.settings_dict.get("OPTIONS") or {}).get("transaction_mode")
        if str(mode).upper() not in {"IMMEDIATE", "EXCLUSIVE"}:
            return (
                f"SQLite database {connection.alias!r} opens transactions in DEFERRED mode, so two processes "
                "claiming at once fail with 'database is locked'"
            )
    if connection.vendor == "mysql":
        level = (connection.settings_dict.get("OPTIONS") or {}).get("isolation_level", "read committed")
        # Django lower-cases it too; None leaves the server's default, REPEATABLE READ.
        if not isinstance(level, str) or level.lower() != "read committed":
            return (
                f"MySQL database {connection.alias!r} uses isolation level {level!r}: above READ COMMITTED, "
                "InnoDB takes gap locks that make concurrent claims deadlock and stale snapshots hide new jobs"
            )
    return None


CLAIM_PROBLEM_HINTS = {
    "sqlite": "Add 'OPTIONS': {'transaction_mode': 'IMMEDIATE'} to this database in settings.DATABASES.",
    "mysql": "Remove 'isolation_level' from this database's OPTIONS, or set it to 'read committed'.",
}


def claim_hint(connection: BaseDatabaseWrapper) -> str:
    """How to fix the problem :func:`claim_problem` found on ``connection``."""
    return CLAIM_PROBLEM_HINTS[connection.vendor]


def version_problem(connection: BaseDatabaseWrapper) -> str | None:
    """Why this database server cannot run the queue, or None; asks the server for its version."""
    # Only a MySQL connection has these, and its class imports mysqlclient: no isinstance.
    server: Any = connection
    if connection.vendor == "mysql" and server.mysql_is_mariadb:
        version = server.mysql_version
        if version < MARIADB_MIN_VERSION:
            return (
                f"MariaDB {_dotted(version)} has no SELECT ... SKIP LOCKED; "
                f"django-sqlqueue needs MariaDB {_dotted(MARIADB_MIN_VERSION)} or newer (10.11+ is tested)"
            )
    return None


#: How to put a SQLite database in WAL mode, for the check that finds it is not.
JOURNAL_HINT = (
    'Add "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;" to the database\'s '
    "OPTIONS (see Troubleshooting in django-sqlqueue's documentation), or run PRAGMA journal_mode=WAL on the file once."
)


def journal_problem(connection: BaseDatabaseWrapper) -> str | None:
    """Why this SQLite database makes a slow queue, or None; asks the database.

    Outside WAL mode, every claim and finish rewrites a rollback journal and blocks
    every reader while it commits: workers drain several times slower, and the admin
    waits on them. The mode is kept in the file, so asking the database is what tells."""
    if connection.vendor != "sqlite" or cast(Any, connection).is_in_memory_db():
        return None
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        (mode,) = cursor.fetchone()
    if mode.lower() == "wal":
        return None
    return f"SQLite database {connection.alias!r} is in journal_mode {mode}, not WAL: claims and finishes block readers"


#: How to let autovacuum clean the jobs table, for the check that finds it cannot.
VACUUM_HINT = (
    "Turn autovacuum on, as PostgreSQL has it by default (autovacuum = on in postgresql.conf, or "
    "ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf();), and leave the jobs table's "
    "autovacuum_enabled alone; or VACUUM the jobs table every minute or so yourself."
)


def vacuum_problem(connection: BaseDatabaseWrapper, table: str) -> str | None:
    """Why nothing cleans this PostgreSQL database's jobs ``table`` up, or None; asks the
    database.

    Every claim and every finish writes a new version of its row and leaves the old one
    dead, and autovacuum is what removes them (the queue's migration tunes it for the
    table). With it off, on the server or on the table, they pile up and every claim
    wades through them: with 2.9 million left by earlier runs, two workers drained
    14,000-18,700 no-op jobs a second where a fresh table took 26,000-28,000."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('autovacuum'), (SELECT reloptions FROM pg_class WHERE oid = to_regclass(%s))",
            [connection.ops.quote_name(table)],
        )
        server, options = cursor.fetchone()
    where = f"PostgreSQL database {connection.alias!r}"
    if server != "on":
        return f"{where} runs with autovacuum off: the dead rows every claim and finish leaves in {table} pile up"
    if "autovacuum_enabled=false" in (options or []):
        return f"{where} has autovacuum_enabled=false on {table}: the dead rows every claim and finish leaves pile up"
    return None


def driver_problem(connection: BaseDatabaseWrapper) -> str | None:
    """Why the driver this connection uses cannot run the queue, or None.

    Asks the driver module, never the server, so it is cheap enough for every command."""
    # Django's Database attribute is the driver's DB-API module: psycopg or psycopg2, sqlite3's dbapi2.
    driver = cast(Any, connection).Database
    if connection.vendor == "postgresql":
        name, version = driver.__name__, _numbers(driver.__version__)
        if name != "psycopg" or version < PSYCOPG_MIN_VERSION:
            return (
                f"PostgreSQL database {connection.alias!r} uses {name} {driver.__version__}; "
                f"django-sqlqueue needs psycopg {_dotted(PSYCOPG_MIN_VERSION)} or newer"
            )
    if connection.vendor == "sqlite" and driver.sqlite_version_info < SQLITE_MIN_VERSION:
        return (
            f"SQLite database {connection.alias!r} runs on SQLite {driver.sqlite_version}, which has no "
            f"UPDATE ... RETURNING; django-sqlqueue needs SQLite {_dotted(SQLITE_MIN_VERSION)} or newer"
        )
    return None


DRIVER_PROBLEM_HINTS = {
    # Django takes psycopg 3 over psycopg2 when both are installed.
    "postgresql": "Install psycopg 3.2 or newer: pip install 'django-sqlqueue[postgres]'.",
    "sqlite": "Run on a Python linked with a newer SQLite, or on PostgreSQL or MySQL.",
}


def driver_hint(connection: BaseDatabaseWrapper) -> str:
    """How to fix the problem :func:`driver_problem` found on ``connection``."""
    return DRIVER_PROBLEM_HINTS[connection.vendor]


def _numbers(version: str) -> tuple[int, ...]:
    """The major and minor numbers of a version string: ``"3.2.1"`` is ``(3, 2)``."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def database_label(using: str) -> str:
    """``using``'s database as the ``runworkers`` banner names it: its vendor and name."""
    connection = connections[using]
    return f"{connection.vendor} {connection.settings_dict['NAME']}"
