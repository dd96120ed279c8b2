"""The server's connection limit and use (``db/capacity.py``), as each server says."""

from __future__ import annotations

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections

from django_sqlqueue.db.capacity import ServerConnections, server_connections

pytestmark = pytest.mark.django_db


def asked() -> ServerConnections:
    server = server_connections(DEFAULT_DB_ALIAS)
    assert server is not None
    return server


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite has no server and no limit")
def test_sqlite_has_no_limit() -> None:
    assert server_connections(DEFAULT_DB_ALIAS) is None


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
        assert server_connections(DEFAULT_DB_ALIAS) is None
    finally:
        del connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"]
