"""What every engine says of its connections: how many a worker process opens, and the
server's limit and use, as each server says (SQLite has no server)."""

from __future__ import annotations

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections

from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.engines.base import ServerConnections
from django_sqlqueue.db.engines.mysql import MySQL
from django_sqlqueue.db.engines.postgresql import PostgreSQL
from django_sqlqueue.db.engines.sqlite import SQLite

pytestmark = pytest.mark.django_db


def asked() -> ServerConnections:
    server = engine(connections["default"]).server_connections()
    assert server is not None
    return server


def test_each_process_costs_its_claims_its_heartbeat_its_threads_and_where_it_listens_its_listen() -> None:
    default = connections["default"]
    assert engine(default).worker_connections(4) == 6 + engine(default).notifies
    # Every database's engine, made on this one's connection: the count needs no query.
    assert SQLite(default).worker_connections(1) == MySQL(default).worker_connections(1) == 3
    assert MySQL(default).worker_connections(4) == 6
    assert PostgreSQL(default).worker_connections(4) == 7


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite has no server and no limit")
def test_sqlite_has_no_limit() -> None:
    assert engine(connections["default"]).server_connections() is None


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite has no server and no limit")
def test_the_server_says_its_limit_and_counts_the_connections_open() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_connections" if connection.vendor == "postgresql" else "SELECT @@max_connections")
        (max_connections,) = cursor.fetchone()
    # The tests connect as a superuser (PostgreSQL) or root (MariaDB): the whole limit is theirs.
    assert asked().limit == int(max_connections)

    def opened_seen() -> int:
        before = asked().in_use
        extra = [connections.create_connection(DEFAULT_DB_ALIAS) for _ in range(4)]
        for wrapper in extra:
            wrapper.ensure_connection()
        try:
            return asked().in_use - before
        finally:
            for wrapper in extra:
                wrapper.close()

    # Other tests share the server and open and close their own meanwhile: one of a few
    # tries sees the four opened here alone.
    assert 4 in [opened_seen() for _ in range(5)]
    server = asked()
    assert server.free == server.limit - server.in_use > 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL transaction pooler")
def test_behind_a_transaction_pooler_the_servers_limit_is_not_asked() -> None:
    connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = True
    try:
        assert engine(connections["default"]).server_connections() is None
    finally:
        del connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"]
