"""What ``runworkers`` costs in connections, and the processes a server cannot hold
(``runner/capacity.py``)."""

from __future__ import annotations

import re

import pytest
from django.db import DEFAULT_DB_ALIAS, connection

from django_sqlqueue.db.capacity import connections_per_process, server_connections
from django_sqlqueue.runner.capacity import connections_problem

pytestmark = pytest.mark.django_db


def test_each_process_costs_its_claims_its_heartbeat_its_threads_and_on_postgresql_its_listen() -> None:
    assert connections_per_process(1, "sqlite") == connections_per_process(1, "mysql") == 3
    assert connections_per_process(4, "mysql") == 6
    assert connections_per_process(4, "postgresql") == 7


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite has no connection limit")
def test_sqlite_holds_any_number() -> None:
    assert connections_problem(100_000, 64) is None


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite has no connection limit")
def test_what_the_server_cannot_hold_is_refused_and_what_it_can_is_not() -> None:
    server = server_connections(DEFAULT_DB_ALIAS)
    assert server is not None
    assert connections_problem(1, 1) is None
    each = connections_per_process(2, connection.vendor)
    problem = connections_problem(server.limit, 2)
    assert problem is not None
    assert re.fullmatch(
        rf"--processes {server.limit} x --threads 2 needs up to {server.limit * each} connections to database "
        rf"'default' \({each} per process\), but its server takes \d+ more: max_connections allows "
        rf"{server.limit} and \d+ are open\. Run fewer processes or threads, or raise max_connections\.",
        problem,
    ), problem
