"""Fixtures the in-process tests of the vendors and of the system checks share."""

from __future__ import annotations

import pytest
from django.db import connection


@pytest.fixture
def mysql_backend() -> None:
    """Skips where mysqlclient is missing: MySQL connections are built, never opened."""
    pytest.importorskip("MySQLdb", reason="mysqlclient is not installed")


@pytest.fixture
def mysql_server() -> None:
    """Skips unless the test database is a MariaDB/MySQL server."""
    if connection.vendor != "mysql":
        pytest.skip("MariaDB server versions: run with DB_BACKEND=mysql")
