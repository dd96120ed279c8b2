"""A connection the server ends under its holder, as a restart, a failover or a killed
session does: the holder learns of it at its next statement, which raises."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, connections

from django_sqlqueue.db import finishing

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


def sever_outcome_writes(monkeypatch: pytest.MonkeyPatch, times: int, *, after: int = 0) -> None:
    """End the session of each of ``times`` statements that write a finish's outcomes,
    the next ones once ``after`` more have run, just before it runs, as a conformance
    suite that kills the finish's session does: the statement meets the connection ended."""
    run = finishing._OutcomeUpdate.run
    untouched, left = [after], [times]

    def severed_first(update: Any, sql: str, params: tuple[Any, ...]) -> int:
        if untouched[0]:
            untouched[0] -= 1
        elif left[0]:
            left[0] -= 1
            sever()
        return run(update, sql, params)

    monkeypatch.setattr(finishing._OutcomeUpdate, "run", severed_first)
