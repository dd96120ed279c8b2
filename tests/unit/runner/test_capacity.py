"""What ``runworkers`` costs in connections, and the processes a server cannot hold
(``runner/capacity.py``)."""

from __future__ import annotations

import re

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections

from django_sqlqueue.db.engines import engine
from django_sqlqueue.runner.capacity import connections_problem

pytestmark = pytest.mark.django_db


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite has no connection limit")
def test_sqlite_holds_any_number() -> None:
    assert connections_problem(100_000, 64) is None


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite has no connection limit")
def test_what_the_server_cannot_hold_is_refused_and_what_it_can_is_not() -> None:
    database = engine(connections[DEFAULT_DB_ALIAS])
    server = database.server_connections()
    assert server is not None
    assert connections_problem(1, 1) is None
    each = database.worker_connections(2)
    problem = connections_problem(server.limit, 2)
    assert problem is not None
    assert re.fullmatch(
        rf"--processes {server.limit} x --threads 2 needs up to {server.limit * each} connections to database "
        rf"'default' \({each} per process\), but its server takes \d+ more: max_connections allows "
        rf"{server.limit} and \d+ are open\. Run fewer processes or threads, or raise max_connections\.",
        problem,
    ), problem
