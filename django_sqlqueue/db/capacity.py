"""How many more connections the database server takes: its limit, less those open now,
as the server says (``runworkers`` refuses to start more worker processes than that).
Each vendor's statements are here; SQLite has no limit."""

from __future__ import annotations

from typing import NamedTuple

from django.db import connections


class ServerConnections(NamedTuple):
    """What the server says of its connections."""

    #: How many it lets this user open: ``max_connections``, less the slots kept for
    #: superusers (and, from PostgreSQL 16, ``reserved_connections``) for anyone else.
    limit: int
    #: How many client connections are open now, this one among them.
    in_use: int

    @property
    def free(self) -> int:
        return max(0, self.limit - self.in_use)


#: PostgreSQL: ``reserved_connections`` (16+) reads as NULL where it does not exist;
#: walsenders and background workers have slots of their own.
_POSTGRESQL = """
    SELECT current_setting('max_connections')::int,
           current_setting('superuser_reserved_connections')::int
               + COALESCE(current_setting('reserved_connections', true)::int, 0),
           (SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
           (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')
"""


def connections_per_process(threads: int, vendor: str) -> int:
    """The most connections to the jobs' database one worker process opens: its claims
    and finishes, its heartbeat, one per thread for the tasks, and on PostgreSQL its
    ``LISTEN`` (``notifying.listening_connection``)."""
    return 2 + threads + (vendor == "postgresql")


def process_connections(threads: int, using: str) -> int:
    """:func:`connections_per_process` for a worker process of ``threads`` threads on ``using``."""
    return connections_per_process(threads, connections[using].vendor)


def server_connections(using: str) -> ServerConnections | None:
    """The connection limit of ``using``'s server and how much of it is used, or None
    where there is no server to ask: SQLite, or PostgreSQL through a transaction pooler
    (``DISABLE_SERVER_SIDE_CURSORS``, as Django asks for one), whose clients hold no
    server connection each."""
    connection = connections[using]
    if connection.vendor == "postgresql" and not connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS"):
        with connection.cursor() as cursor:
            # The activity read once in a transaction is kept until it ends: read it afresh.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(_POSTGRESQL)
            limit, reserved, superuser, in_use = cursor.fetchone()
        return ServerConnections(limit if superuser else limit - reserved, in_use)
    if connection.vendor == "mysql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@max_connections")
            (limit,) = cursor.fetchone()
            cursor.execute("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
            _, in_use = cursor.fetchone()
        return ServerConnections(int(limit), int(in_use))
    return None
