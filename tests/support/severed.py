"""A connection the server ends under its holder, as a restart, a failover or a killed
session does: the holder learns of it at its next statement, which raises."""

from __future__ import annotations

import pytest
from django.db import connection, connections

#: SQLite is a file: there is no server to end a connection.
needs_a_server = pytest.mark.skipif(
    connection.vendor == "sqlite", reason="SQLite is a file: there is no server connection to lose"
)


def sever(alias: str = "default") -> None:
    """End, from another session, the session that this thread's connection ``alias``
    holds (opened first if need be), and wait until the server has ended it."""
    victim = connections[alias]
    with victim.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()" if victim.vendor == "postgresql" else "SELECT CONNECTION_ID()")
        (session,) = cursor.fetchone()
    killer = connections.create_connection(alias)
    try:
        with killer.cursor() as cursor:
            if victim.vendor == "postgresql":
                cursor.execute("SELECT pg_terminate_backend(%s, 10000)", [session])  # returns once it has ended
            else:
                cursor.execute(f"KILL CONNECTION {int(session)}")
    finally:
        killer.close()
