"""PostgreSQL's wake-up channel: what idle workers ``LISTEN`` on (``runner/wakeup.py``)
and who sends on it. PostgreSQL delivers a ``NOTIFY`` when its transaction commits, so
a worker never wakes for a change it cannot see yet."""

from __future__ import annotations

from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

#: The channel. The initial migration's trigger sends on it (an empty payload) on every INSERT.
CHANNEL = "sqlqueue"
#: The payload of a pause or resume (``db/pausing.py``): the paused queues changed.
QUEUES_CHANGED = "queues"


def notify(alias: str, payload: str) -> None:
    """Send ``payload`` to the listening workers when the current transaction commits
    (at once in autocommit); nothing on the databases that have no ``NOTIFY``."""
    if notifies(alias):
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, payload])


def notifies(alias: str) -> bool:
    """Whether ``alias``'s database delivers notifications (PostgreSQL): elsewhere an
    idle worker polls."""
    return connections[alias].vendor == "postgresql"


def listening_connection(alias: str) -> BaseDatabaseWrapper:
    """A connection of its own to ``alias``, in autocommit, listening on :data:`CHANNEL`:
    its driver connection's ``notifies()`` yields what is sent. The caller closes it."""
    wrapper = connections.create_connection(alias)
    wrapper.ensure_connection()
    wrapper.set_autocommit(True)
    connection: Any = wrapper.connection
    connection.execute(f"LISTEN {CHANNEL}")
    return wrapper
