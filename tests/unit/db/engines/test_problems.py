"""What makes the queue unsafe on each database (each engine's ``claim_problem``,
``version_problem`` and ``driver_problem``): the settings a safe claim needs, the
oldest servers and drivers it runs on."""

from __future__ import annotations

import types
from typing import Any

import pytest
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.db.engines import engine
from tests.support.messages import SQLITE_DEFERRED, mysql_isolation_problem
from tests.support.unopened import unopened

# Databases set up so that claims would be unsafe


@pytest.mark.parametrize(
    ("backend", "options", "problem"),
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
def test_claim_problem(backend: str, options: dict[str, Any] | None, problem: str | None) -> None:
    found = engine(unopened(backend, options, alias="queue")).claim_problem()
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
    assert engine(unopened("sqlite3", options)).claim_problem() == problem


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
    assert engine(unopened("mysql", options)).claim_problem() == problem


@pytest.mark.usefixtures("mysql_backend")
def test_mysql_isolation_level_is_case_insensitive() -> None:
    """Django lower-cases ``isolation_level`` before it uses it, so 'READ COMMITTED' is READ COMMITTED."""
    assert engine(unopened("mysql", {"isolation_level": "READ COMMITTED"})).claim_problem() is None


def test_postgresql_has_no_claim_problem() -> None:
    pytest.importorskip("psycopg", reason="psycopg is not installed")
    assert engine(unopened("postgresql", {"isolation_level": 3})).claim_problem() is None


@pytest.mark.django_db
@pytest.mark.usefixtures("mysql_server")
def test_mariadb_before_10_6_is_refused() -> None:
    fresh = connections.create_connection("default")
    try:
        assert fresh.mysql_is_mariadb  # type: ignore[attr-defined]
        fresh.__dict__["mysql_version"] = (10, 5, 26)
        assert engine(fresh).version_problem() == (
            "MariaDB 10.5.26 has no SELECT ... SKIP LOCKED; django-sqlqueue needs MariaDB 10.6 or newer "
            "(10.11+ is tested)"
        )
        fresh.__dict__["mysql_version"] = (10, 6, 0)
        assert engine(fresh).version_problem() is None
    finally:
        fresh.close()


@pytest.mark.usefixtures("mysql_backend")
def test_mysql_server_version_is_not_checked() -> None:
    """MySQL (not MariaDB) has had SKIP LOCKED since 8.0, Django's own minimum."""
    mysql = unopened("mysql", None)
    mysql.__dict__.update(mysql_is_mariadb=False, mysql_version=(5, 7, 0))
    assert engine(mysql).version_problem() is None


# Drivers: what the installed driver module says of itself


def with_driver(engine: str, **module: Any) -> BaseDatabaseWrapper:
    """An unopened wrapper whose driver module is ``module``: the driver check reads only
    the module's name and version, so a stand-in shows what an older install would say."""
    wrapper = unopened(engine, None)
    wrapper.__dict__["Database"] = types.SimpleNamespace(**module)
    return wrapper


def test_the_installed_driver_has_no_problem() -> None:
    assert engine(connections["default"]).driver_problem() is None


@pytest.mark.parametrize(
    ("name", "version", "problem"),
    [
        ("psycopg", "3.2.0", None),
        ("psycopg", "3.10.1", None),
        # No Connection.notifies(timeout=, stop_after=): the idle wait would fail on its first call.
        (
            "psycopg",
            "3.1.18",
            "PostgreSQL database 'jobs' uses psycopg 3.1.18; django-sqlqueue needs psycopg 3.2 or newer",
        ),
        # Django still runs on psycopg2 when psycopg 3 is not installed; the idle wait cannot.
        (
            "psycopg2",
            "2.9.10 (dt dec pq3 ext lo64)",
            "PostgreSQL database 'jobs' uses psycopg2 2.9.10 (dt dec pq3 ext lo64); "
            "django-sqlqueue needs psycopg 3.2 or newer",
        ),
    ],
)
def test_postgresql_driver_problem(name: str, version: str, problem: str | None) -> None:
    pytest.importorskip("psycopg", reason="Django's PostgreSQL backend needs a driver to load")
    assert engine(with_driver("postgresql", __name__=name, __version__=version)).driver_problem() == problem


def test_sqlite_before_3_35_is_refused() -> None:
    """The claim on SQLite is one UPDATE ... RETURNING, which SQLite 3.31 (Django's minimum) lacks."""
    old = with_driver("sqlite3", sqlite_version="3.34.1", sqlite_version_info=(3, 34, 1))
    assert engine(old).driver_problem() == (
        "SQLite database 'jobs' runs on SQLite 3.34.1, which has no UPDATE ... RETURNING; "
        "django-sqlqueue needs SQLite 3.35 or newer"
    )
    current = with_driver("sqlite3", sqlite_version="3.35.0", sqlite_version_info=(3, 35, 0))
    assert engine(current).driver_problem() is None
