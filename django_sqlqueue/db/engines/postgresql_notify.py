"""PostgreSQL's wake-up channels: the one idle workers ``LISTEN`` on (``runner/wakeup.py``)
and who sends on it, and the one a waiter for a job's end listens on (``db/waiting.py``).
PostgreSQL delivers a ``NOTIFY`` when its transaction commits, so a worker never wakes
for a change it cannot see yet, nor a waiter for an end not yet written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

#: The channel. The initial migration's trigger sends on it (an empty payload) on every INSERT.
CHANNEL = "sqlqueue"
#: The channel of finished jobs: each payload is the ids of jobs that reached a final
#: status, space-separated (``db/finished.py``). Apart, so that no idle worker wakes to it.
FINISHED_CHANNEL = "sqlqueue_finished"


def notify(connection: BaseDatabaseWrapper, *payloads: str, channel: str = CHANNEL) -> None:
    """Send each of ``payloads`` on ``channel`` when ``connection``'s transaction commits,
    in one statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT " + ", ".join(["pg_notify(%s, %s)"] * len(payloads)),
            [value for payload in payloads for value in (channel, payload)],
        )


def announcing_update(update: str, pk: str, status: str, finished: Sequence[str]) -> str:
    """``update`` (an ``UPDATE`` of jobs) made to also send, on :data:`FINISHED_CHANNEL`,
    the id of each row it wrote whose ``status`` is one of ``finished``: a ``RETURNING``
    clause, so that the statement is the same ``UPDATE``, counted as before, and the
    notifications go with its own transaction: no statement more, no commit more."""
    statuses = ", ".join("'" + value.replace("'", "''") + "'" for value in finished)
    return f"{update} RETURNING CASE WHEN {status} IN ({statuses}) THEN pg_notify('{FINISHED_CHANNEL}', {pk}::text) END"


def listening_connection(alias: str, channel: str = CHANNEL) -> BaseDatabaseWrapper:
    """A connection of its own to ``alias``, in autocommit, listening on ``channel``:
    its driver connection's ``notifies()`` yields what is sent. The caller closes it."""
    wrapper = connections.create_connection(alias)
    wrapper.ensure_connection()
    wrapper.set_autocommit(True)
    connection: Any = wrapper.connection
    connection.execute(f"LISTEN {channel}")
    return wrapper
