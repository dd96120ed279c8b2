"""What each database needs (``db/vendors.py``): what makes a claim unsafe
(``claim_problem``, ``version_problem``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import load_backend

from django_sqlqueue.db.vendors import claim_problem, version_problem

SQLITE_DEFERRED = (
    "SQLite database 'jobs' opens transactions in DEFERRED mode, so two processes claiming at once fail "
    "with 'database is locked'"
)


def mysql_isolation_problem(level: object) -> str:
    return (
        f"MySQL database 'jobs' uses isolation level {level!r}: above READ COMMITTED, InnoDB takes gap locks "
        "that make concurrent claims deadlock and stale snapshots hide new jobs"
    )


def unopened(engine: str, options: dict[str, Any] | None, alias: str = "jobs") -> BaseDatabaseWrapper:
    """A database wrapper for these settings that never connects: the claim checks read settings only."""
    settings_dict: dict[str, Any] = {"ENGINE": f"django.db.backends.{engine}", "NAME": "jobs"}
    if options is not None:
        settings_dict["OPTIONS"] = options
    made: BaseDatabaseWrapper = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, alias)
    return made


@pytest.fixture
def mysql_backend() -> None:
    pytest.importorskip("MySQLdb", reason="mysqlclient is not installed")


@pytest.fixture
def mysql_server() -> None:
    if connection.vendor != "mysql":
        pytest.skip("MariaDB server versions: run with DB_BACKEND=mysql")


# Databases set up so that claims would be unsafe


@pytest.mark.parametrize(
    ("engine", "options", "problem"),
    [
        ("sqlite3", {"transaction_mode": "IMMEDIATE"}, None),
        ("sqlite3", {"transaction_mode": "immediate"}, None),
        ("sqlite3", {"transaction_mode": "EXCLUSIVE"}, None),
        ("sqlite3", {"transaction_mode": "DEFERRED"}, "SQLite database 'queue' opens transactions in DEFERRED mode"),
        ("sqlite3", {"transaction_mode": None}, "SQLite database 'queue' opens transactions in DEFERRED mode"),
        ("sqlite3", {"timeout": 30}, "SQLite database 'queue' opens transactions in DEFERRED mode"),
        ("sqlite3", {}, "SQLite database 'queue' opens transactions in DEFERRED mode"),
        ("sqlite3", None, "SQLite database 'queue' opens transactions in DEFERRED mode"),
        ("mysql", {}, None),
        ("mysql", None, None),
        ("mysql", {"isolation_level": "read committed"}, None),
        ("mysql", {"isolation_level": "READ COMMITTED"}, None),
        (
            "mysql",
            {"isolation_level": "repeatable read"},
            "MySQL database 'queue' uses isolation level 'repeatable read'",
        ),
        ("mysql", {"isolation_level": "serializable"}, "MySQL database 'queue' uses isolation level 'serializable'"),
        ("mysql", {"isolation_level": None}, "MySQL database 'queue' uses isolation level None"),
        ("postgresql", {}, None),
        ("postgresql", None, None),
    ],
)
def test_claim_problem(engine: str, options: dict[str, Any] | None, problem: str | None) -> None:
    found = claim_problem(unopened(engine, options, alias="queue"))
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert found.startswith(problem)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (None, SQLITE_DEFERRED),
        ({}, SQLITE_DEFERRED),
        ({"timeout": 30}, SQLITE_DEFERRED),
        ({"transaction_mode": "DEFERRED"}, SQLITE_DEFERRED),
        ({"transaction_mode": "IMMEDIATE"}, None),
        ({"transaction_mode": "immediate"}, None),
        ({"transaction_mode": "EXCLUSIVE"}, None),
    ],
)
def test_sqlite_claim_problem(options: dict[str, Any] | None, problem: str | None) -> None:
    assert claim_problem(unopened("sqlite3", options)) == problem


@pytest.mark.usefixtures("mysql_backend")
@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (None, None),
        ({"charset": "utf8mb4"}, None),
        ({"isolation_level": "read committed"}, None),
        ({"isolation_level": "repeatable read"}, mysql_isolation_problem("repeatable read")),
        ({"isolation_level": "serializable"}, mysql_isolation_problem("serializable")),
        # No level: the session keeps the server's default, REPEATABLE READ.
        ({"isolation_level": None}, mysql_isolation_problem(None)),
    ],
)
def test_mysql_claim_problem(options: dict[str, Any] | None, problem: str | None) -> None:
    assert claim_problem(unopened("mysql", options)) == problem


@pytest.mark.usefixtures("mysql_backend")
def test_mysql_isolation_level_is_case_insensitive() -> None:
    """Django lower-cases ``isolation_level`` before it uses it, so 'READ COMMITTED' is READ COMMITTED."""
    assert claim_problem(unopened("mysql", {"isolation_level": "READ COMMITTED"})) is None


def test_postgresql_has_no_claim_problem() -> None:
    pytest.importorskip("psycopg", reason="psycopg is not installed")
    assert claim_problem(unopened("postgresql", {"isolation_level": 3})) is None


@pytest.mark.django_db
@pytest.mark.usefixtures("mysql_server")
def test_mariadb_before_10_6_is_refused() -> None:
    fresh = connections.create_connection("default")
    try:
        assert fresh.mysql_is_mariadb  # type: ignore[attr-defined]
        fresh.__dict__["mysql_version"] = (10, 5, 26)
        assert version_problem(fresh) == (
            "MariaDB 10.5.26 has no SELECT ... SKIP LOCKED; django-sqlqueue needs MariaDB 10.6 or newer "
            "(10.11+ is tested)"
        )
        fresh.__dict__["mysql_version"] = (10, 6, 0)
        assert version_problem(fresh) is None
    finally:
        fresh.close()


@pytest.mark.usefixtures("mysql_backend")
def test_mysql_server_version_is_not_checked() -> None:
    """MySQL (not MariaDB) has had SKIP LOCKED since 8.0, Django's own minimum."""
    mysql = unopened("mysql", None)
    mysql.__dict__.update(mysql_is_mariadb=False, mysql_version=(5, 7, 0))
    assert version_problem(mysql) is None
