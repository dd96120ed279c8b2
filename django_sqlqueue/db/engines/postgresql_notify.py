"""PostgreSQL's wake-up channel: what idle workers ``LISTEN`` on (``runner/wakeup.py``)
and who sends on it. PostgreSQL delivers a ``NOTIFY`` when its transaction commits, so
a worker never wakes for a change it cannot see yet."""

from __future__ import annotations

from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

#: The channel. The initial migration's trigger sends on it (an empty payload) on every INSERT.
CHANNEL = "sqlqueue"


def notify(connection: BaseDatabaseWrapper, payload: str) -> None:
    """Send ``payload`` on :data:`CHANNEL` when ``connection``'s transaction commits."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, payload])


def listening_connection(alias: str) -> BaseDatabaseWrapper:
    """A connection of its own to ``alias``, in autocommit, listening on :data:`CHANNEL`:
    its driver connection's ``notifies()`` yields what is sent. The caller closes it."""
    wrapper = connections.create_connection(alias)
    wrapper.ensure_connection()
    wrapper.set_autocommit(True)
    connection: Any = wrapper.connection
    connection.execute(f"LISTEN {CHANNEL}")
    return wrapper
