"""PostgreSQL's wake-up channel: what idle workers ``LISTEN`` on (``runner/wakeup.py``)
and who sends on it. PostgreSQL delivers a ``NOTIFY`` when its transaction commits, so
a worker never wakes for a change it cannot see yet."""

from __future__ import annotations

from django.db import connections

#: The channel. Migration 0003's trigger sends on it (an empty payload) on every INSERT.
CHANNEL = "sqlqueue"
#: The payload of a pause or resume (``pausing.py``): the paused queues changed.
QUEUES_CHANGED = "queues"


def notify(alias: str, payload: str) -> None:
    """Send ``payload`` to the listening workers when the current transaction commits
    (at once in autocommit); nothing on the databases that have no ``NOTIFY``."""
    connection = connections[alias]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, payload])
