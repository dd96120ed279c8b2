"""What each database needs and how each fails, in one place: the errors worth trying
again, and the settings a safe claim needs (the checks report those problems at
start-up and the claim refuses to run into them)."""

from __future__ import annotations

import re
from typing import Any, cast

from django.db import InterfaceError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper

#: What a lost or restarting database raises: wait, reconnect and try again. Anything
#: else (a missing table, say) is a bug or a misconfiguration and should stop a worker
#: loudly rather than loop.
DATABASE_AWAY = (OperationalError, InterfaceError)

# MySQL/MariaDB: ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT.
_MYSQL_TRANSIENT_CODES = {1213, 1205}
# PostgreSQL: serialization_failure, deadlock_detected, lock_not_available.
_POSTGRES_TRANSIENT_STATES = {"40001", "40P01", "55P03"}
_SQLITE_TRANSIENT_MESSAGES = ("database is locked", "database table is locked")

MARIADB_MIN_VERSION = (10, 6)
#: ``Connection.notifies(timeout=, stop_after=)``, which the idle wait uses, came in 3.2.
PSYCOPG_MIN_VERSION = (3, 2)
#: ``UPDATE ... RETURNING``, which the claim uses on SQLite, came in 3.35.
SQLITE_MIN_VERSION = (3, 35)


def is_transient(error: OperationalError) -> bool:
    """Whether a failed statement may succeed if its whole transaction is run again."""
    cause = error.__cause__
    if getattr(cause, "sqlstate", None) in _POSTGRES_TRANSIENT_STATES:
        return True
    args = getattr(cause, "args", ())
    if args and args[0] in _MYSQL_TRANSIENT_CODES:
        return True
    return any(message in str(error) for message in _SQLITE_TRANSIENT_MESSAGES)


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


def _numbers(version: str) -> tuple[int, ...]:
    """The major and minor numbers of a version string: ``"3.2.1"`` is ``(3, 2)``."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))
