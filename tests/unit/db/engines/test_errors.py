"""How each database fails (``db/engines/errors.py``): the errors worth running a
transaction again for (``is_transient``), those of a database out of reach
(``is_unavailable``) and of data it cannot store (``is_unwritable``), told apart by each
driver's own exceptions."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from django.db import DatabaseError, Error, InterfaceError, OperationalError, connection, connections
from django.db.models import F

from django_sqlqueue.db.engines.errors import is_transient, is_unavailable, is_unwritable
from django_sqlqueue.models import Job
from tests.support.locks import held_elsewhere, impatient
from tests.support.unopened import unopened
from tests.support.unstorable import max_allowed_packet, refused_json
from tests.testapp.tasks import noop

# Transient errors: the classification, with each driver's own exceptions


def as_django_raises(engine: str, driver_module: str, driver_class: str, args: tuple[Any, ...]) -> Error:
    """The driver's exception as Django raises it: through the backend's
    ``wrap_database_errors``, with the driver's exception as its ``__cause__``."""
    module = pytest.importorskip(driver_module, reason=f"{driver_module} is not installed")
    cause = getattr(module, driver_class)(*args)
    with pytest.raises(Error) as excinfo, unopened(engine, None).wrap_database_errors:
        raise cause
    assert excinfo.value.__cause__ is cause
    return excinfo.value


@pytest.mark.parametrize(
    ("engine", "driver_module", "driver_class", "args", "transient"),
    [
        # PostgreSQL: the SQLSTATE says.
        pytest.param(
            "postgresql", "psycopg.errors", "SerializationFailure", ("could not serialize access",), True, id="pg-40001"
        ),
        pytest.param("postgresql", "psycopg.errors", "DeadlockDetected", ("deadlock detected",), True, id="pg-40P01"),
        pytest.param(
            "postgresql",
            "psycopg.errors",
            "LockNotAvailable",
            ("canceling statement due to lock timeout",),
            True,
            id="pg-55P03",
        ),
        pytest.param(
            "postgresql",
            "psycopg.errors",
            "QueryCanceled",
            ("canceling statement due to statement timeout",),
            False,
            id="pg-57014",
        ),
        pytest.param(
            "postgresql",
            "psycopg",
            "OperationalError",
            ("server closed the connection unexpectedly",),
            False,
            id="pg-no-sqlstate",
        ),
        # MySQL and MariaDB: the error code.
        pytest.param(
            "mysql",
            "MySQLdb",
            "OperationalError",
            (1213, "Deadlock found when trying to get lock"),
            True,
            id="mysql-1213",
        ),
        pytest.param(
            "mysql", "MySQLdb", "OperationalError", (1205, "Lock wait timeout exceeded"), True, id="mysql-1205"
        ),
        pytest.param(
            "mysql", "MySQLdb", "OperationalError", (2006, "MySQL server has gone away"), False, id="mysql-2006"
        ),
        pytest.param(
            "mysql",
            "MySQLdb",
            "OperationalError",
            (1054, "Unknown column 'x' in 'field list'"),
            False,
            id="mysql-1054",
        ),
        # SQLite: the message alone.
        pytest.param("sqlite3", "sqlite3", "OperationalError", ("database is locked",), True, id="sqlite-locked"),
        pytest.param(
            "sqlite3", "sqlite3", "OperationalError", ("database table is locked",), True, id="sqlite-table-locked"
        ),
        pytest.param("sqlite3", "sqlite3", "OperationalError", ("no such table: x",), False, id="sqlite-no-table"),
        pytest.param("sqlite3", "sqlite3", "OperationalError", ("disk I/O error",), False, id="sqlite-io"),
    ],
)
def test_is_transient(
    engine: str, driver_module: str, driver_class: str, args: tuple[Any, ...], transient: bool
) -> None:
    assert is_transient(as_django_raises(engine, driver_module, driver_class, args)) is transient


# Transient errors: real ones, from the database under test


@pytest.mark.django_db(transaction=True)
def test_a_lock_wait_that_gives_up_is_transient() -> None:
    job = Job.objects.enqueue(noop)
    with held_elsewhere(job), impatient(), pytest.raises(OperationalError) as excinfo:
        Job.objects.filter(pk=job.pk).update(priority=F("priority") + 1)
    error = excinfo.value
    # The error this test means, not another one.
    if connection.vendor == "postgresql":
        assert getattr(error.__cause__, "sqlstate", None) == "55P03"  # lock_not_available
    elif connection.vendor == "mysql":
        assert error.__cause__ is not None
        assert error.__cause__.args[0] == 1205  # ER_LOCK_WAIT_TIMEOUT
    else:
        assert str(error) == "database is locked"
    assert is_transient(error)


#: A statement that fails with an OperationalError that running it again cannot cure,
#: with the statements that set it up and clean up after it.
INCURABLE = {
    "postgresql": (["SET statement_timeout = '50ms'"], "SELECT pg_sleep(5)", ["RESET statement_timeout"]),
    "mysql": ([], f"SELECT no_such_column FROM {Job._meta.db_table}", []),
    "sqlite": ([], "SELECT * FROM no_such_table", []),
}


@pytest.mark.django_db(transaction=True)
def test_an_error_that_running_again_cannot_cure_is_not_transient() -> None:
    before, statement, after = INCURABLE[connection.vendor]
    with connection.cursor() as cursor:
        for setup in before:
            cursor.execute(setup)
        try:
            with pytest.raises(OperationalError) as excinfo:
                cursor.execute(statement)
        finally:
            for cleanup in after:
                cursor.execute(cleanup)
    assert not is_transient(excinfo.value)


# A database out of reach, data it cannot store, and neither: the classification


def pg(name: str, message: str) -> tuple[str, str, str, tuple[Any, ...]]:
    return ("postgresql", "psycopg.errors", name, (message,))


def mysql(code: int, message: str, driver_class: str = "OperationalError") -> tuple[str, str, str, tuple[Any, ...]]:
    return ("mysql", "MySQLdb", driver_class, (code, message))


def sqlite(message: str, driver_class: str = "OperationalError") -> tuple[str, str, str, tuple[Any, ...]]:
    return ("sqlite3", "sqlite3", driver_class, (message,))


UNAVAILABLE, UNWRITABLE, NEITHER = "unavailable", "unwritable", "neither"


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        pytest.param(
            ("postgresql", "psycopg", "OperationalError", ("consuming input failed",)), UNAVAILABLE, id="pg-lost"
        ),
        pytest.param(
            pg("AdminShutdown", "terminating connection due to administrator command"), UNAVAILABLE, id="pg-57P01"
        ),
        pytest.param(pg("CannotConnectNow", "the database system is starting up"), UNAVAILABLE, id="pg-57P03"),
        pytest.param(pg("ReadOnlySqlTransaction", "cannot execute UPDATE in a read-only transaction"), UNAVAILABLE),
        pytest.param(pg("QueryCanceled", "canceling statement due to statement timeout"), UNAVAILABLE, id="pg-57014"),
        pytest.param(pg("DeadlockDetected", "deadlock detected"), UNAVAILABLE, id="pg-40P01"),
        pytest.param(pg("UntranslatableCharacter", "unsupported Unicode escape sequence"), UNWRITABLE),
        pytest.param(pg("InvalidTextRepresentation", "invalid input syntax for type json"), UNWRITABLE),
        pytest.param(pg("NumericValueOutOfRange", "value overflows numeric format"), UNWRITABLE),
        pytest.param(pg("ProgramLimitExceeded", "total size of jsonb array elements exceeds the maximum"), UNWRITABLE),
        pytest.param(("postgresql", "psycopg", "DataError", ("text fields cannot contain NUL",)), UNWRITABLE),
        pytest.param(pg("UndefinedTable", 'relation "x" does not exist'), NEITHER, id="pg-42P01"),
        pytest.param(pg("UndefinedColumn", 'column "x" does not exist'), NEITHER, id="pg-42703"),
        pytest.param(mysql(2006, "Server has gone away"), UNAVAILABLE, id="mysql-2006"),
        pytest.param(mysql(2013, "Lost connection to server during query"), UNAVAILABLE, id="mysql-2013"),
        pytest.param(mysql(1927, "Connection was killed"), UNAVAILABLE, id="mysql-1927"),
        pytest.param(
            mysql(1290, "The MariaDB server is running with the --read-only option"), UNAVAILABLE, id="mysql-1290"
        ),
        pytest.param(mysql(1213, "Deadlock found when trying to get lock"), UNAVAILABLE, id="mysql-1213"),
        pytest.param(mysql(1153, "Got a packet bigger than 'max_allowed_packet' bytes"), UNWRITABLE, id="mysql-1153"),
        pytest.param(mysql(1406, "Data too long for column 'x'", "DataError"), UNWRITABLE, id="mysql-1406"),
        pytest.param(mysql(4025, "CONSTRAINT `x` failed", "IntegrityError"), UNWRITABLE, id="mysql-4025"),
        pytest.param(mysql(1054, "Unknown column 'x' in 'field list'"), NEITHER, id="mysql-1054"),
        pytest.param(mysql(1146, "Table 'x' doesn't exist", "ProgrammingError"), NEITHER, id="mysql-1146"),
        pytest.param(sqlite("database is locked"), UNAVAILABLE, id="sqlite-locked"),
        pytest.param(sqlite("disk I/O error"), UNAVAILABLE, id="sqlite-io"),
        pytest.param(sqlite("attempt to write a readonly database"), UNAVAILABLE, id="sqlite-readonly"),
        pytest.param(sqlite("string or blob too big", "DataError"), UNWRITABLE, id="sqlite-too-big"),
        pytest.param(sqlite('CHECK constraint failed: JSON_VALID("x")', "IntegrityError"), UNWRITABLE),
        pytest.param(sqlite("no such table: x"), NEITHER, id="sqlite-no-table"),
        pytest.param(sqlite("no such column: x"), NEITHER, id="sqlite-no-column"),
    ],
)
def test_classification(raised: tuple[str, str, str, tuple[Any, ...]], kind: str) -> None:
    error = as_django_raises(*raised)
    assert (is_unavailable(error), is_unwritable(error)) == (kind == UNAVAILABLE, kind == UNWRITABLE)


@pytest.mark.parametrize("error", [InterfaceError("connection already closed"), InterfaceError(0, "")])
def test_an_interface_error_is_unavailable(error: InterfaceError) -> None:
    assert is_unavailable(error)
    assert not is_unwritable(error)


# A database out of reach, data it cannot store, and neither: real errors from the database under test


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite is a file: there is no server connection to lose")
def test_a_connection_the_server_ended_is_unavailable() -> None:
    victim = connections.create_connection("default")
    try:
        with victim.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()" if connection.vendor == "postgresql" else "SELECT CONNECTION_ID()")
            session = int(cursor.fetchone()[0])
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SELECT pg_terminate_backend(%s, 10000)", [session])  # waits until it has ended
            else:
                cursor.execute(f"KILL CONNECTION {session}")
        with pytest.raises(Error) as excinfo, victim.cursor() as cursor:
            cursor.execute("SELECT 1")
        assert is_unavailable(excinfo.value)
        assert not is_unwritable(excinfo.value)
    finally:
        with contextlib.suppress(Error):
            victim.close()


def sqlite_raises(path: Path, statement: str, *, mode: str = "rw", timeout: float = 5) -> Error:
    """What a real SQLite database file at ``path`` raises for ``statement`` on a
    connection opened in ``mode``, as Django raises it."""
    with pytest.raises(Error) as excinfo, unopened("sqlite3", None).wrap_database_errors:
        run_on_sqlite(path, statement, mode=mode, timeout=timeout)
    return excinfo.value


def run_on_sqlite(path: Path, statement: str, *, mode: str, timeout: float) -> None:
    """Run ``statement`` on its own connection."""
    database = sqlite3.connect(f"file:{path}?mode={mode}", uri=True, timeout=timeout, isolation_level=None)
    try:
        database.execute(statement)
    finally:
        database.close()


def test_real_sqlite_errors_are_unavailable_or_unwritable(tmp_path: Path) -> None:
    """SQLite kills no session: its errors that pass are a write lock held too long, a
    file it cannot open or write for now; only a value past its limits is the data's."""
    path = tmp_path / "scratch.sqlite3"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as database:
        database.execute("CREATE TABLE t (v TEXT)")
        database.execute("BEGIN IMMEDIATE")
        locked = sqlite_raises(path, "BEGIN IMMEDIATE", timeout=0)
    read_only = sqlite_raises(path, "INSERT INTO t VALUES ('a')", mode="ro")
    unopened_file = sqlite_raises(tmp_path / "missing" / "scratch.sqlite3", "SELECT 1")
    # Past SQLite's limit of a value's length (a billion bytes), which it refuses before it allocates.
    too_big = sqlite_raises(path, "INSERT INTO t VALUES (zeroblob(2000000000))")
    decided = {
        str(error): (is_unavailable(error), is_unwritable(error))
        for error in (locked, read_only, unopened_file, too_big)
    }
    assert decided == {
        "database is locked": (True, False),
        "attempt to write a readonly database": (True, False),
        "unable to open database file": (True, False),
        "string or blob too big": (False, True),
    }


#: Statements that fail because the schema is not what the code expects.
SCHEMA_ERRORS = {
    "missing table": "SELECT * FROM no_such_table",
    "missing column": f"SELECT no_such_column FROM {Job._meta.db_table}",
}


@pytest.mark.django_db
@pytest.mark.parametrize("statement", SCHEMA_ERRORS.values(), ids=SCHEMA_ERRORS)
def test_a_schema_error_is_neither_unavailable_nor_unwritable(statement: str) -> None:
    with pytest.raises(DatabaseError) as excinfo, connection.cursor() as cursor:
        cursor.execute(statement)
    assert not is_unavailable(excinfo.value)
    assert not is_unwritable(excinfo.value)


@pytest.mark.django_db
@pytest.mark.skipif(
    connection.vendor == "sqlite",
    reason="SQLite refuses JSON only nested past 1,000 levels, deeper than Python 3.10's own encoder goes",
)
def test_json_the_database_refuses_is_unwritable() -> None:
    job = Job.objects.enqueue(noop)
    with pytest.raises(DatabaseError) as excinfo:
        Job.objects.filter(pk=job.pk).update(result=refused_json())
    assert is_unwritable(excinfo.value)
    assert not is_unavailable(excinfo.value)


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="only PostgreSQL's jsonb refuses a lone surrogate")
def test_a_lone_surrogate_in_jsonb_is_unwritable() -> None:
    job = Job.objects.enqueue(noop)
    with pytest.raises(DatabaseError) as excinfo:
        Job.objects.filter(pk=job.pk).update(result="\ud800")
    assert is_unwritable(excinfo.value)


@pytest.mark.django_db(transaction=True)  # the server ends the connection, and with it any transaction
@pytest.mark.skipif(connection.vendor != "mysql", reason="MariaDB's max_allowed_packet bounds a statement")
def test_a_statement_larger_than_max_allowed_packet_is_unwritable() -> None:
    job = Job.objects.enqueue(noop)
    try:
        with pytest.raises(DatabaseError) as excinfo:
            Job.objects.filter(pk=job.pk).update(result="x" * max_allowed_packet())
        assert excinfo.value.args[0] == 1153
        assert is_unwritable(excinfo.value)
        assert not is_unavailable(excinfo.value)
    finally:
        connection.close()  # the server closed its end
