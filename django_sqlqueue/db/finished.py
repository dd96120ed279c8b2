"""Telling those who wait for jobs (``db/waiting.py``) that they finished: the ids of
the jobs a finish brought to a final status, as ``NOTIFY`` payloads on PostgreSQL's
channel of finished jobs (sent in the finish's transaction, delivered as it commits),
and as datagrams to the waiters' sockets on this host elsewhere (sent once it commits).

On PostgreSQL the finish's own ``UPDATE`` sends the notification
(``Engine.announcing_update``): no statement more, and no commit more, which a
``NOTIFY`` of its own would cost (a transaction that notifies is flushed to disk as it
commits); only a success that deleted its job (``SQLQUEUE_RETENTION``) is told by a
statement of its own, in the DELETE's transaction. Elsewhere a few datagrams per finish, however many jobs it wrote;
where nobody waits on this host (no waiters' folder, or no socket in it), nothing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import transaction

from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.wakeup import send_datagrams
from django_sqlqueue.rules.lifecycle import FINISHED, SUCCEED_AND_DELETE

if TYPE_CHECKING:
    from django_sqlqueue.db.finishing import Ended

#: The longest payload, in bytes: below PostgreSQL's limit of 8,000, and a datagram any
#: system takes.
MOST_PAYLOAD = 4000


def announce_ended(alias: str, ended: Iterable[Ended]) -> None:
    """Tell the waiters of ``alias`` which of the outcomes a finish wrote (``ended``)
    brought their job to a final status (not a retry, nor a snooze), as :func:`announce`.
    Where the database notifies, the finish's ``UPDATE`` told of the jobs it wrote
    itself (``Engine.announcing_update``): only those its success deleted are left."""
    if engine_for(alias).notifies:
        announce(alias, [outcome.job.pk for outcome in ended if outcome.transition is SUCCEED_AND_DELETE])
    else:
        announce(alias, [outcome.job.pk for outcome in ended if outcome.status in FINISHED])


def announce(alias: str, ids: Iterable[int]) -> None:
    """Tell the waiters of ``alias`` that the jobs ``ids`` finished, when the current
    transaction commits (at once in autocommit); nothing when there are none. A job
    named that did not finish after all costs a waiter one read of its row."""
    payloads = encode(ids)
    if not payloads:
        return
    database = engine_for(alias)
    if database.notifies:
        database.notify_finished(payloads)
    else:
        transaction.on_commit(lambda: send_datagrams(alias, [p.encode() for p in payloads], waiting=True), using=alias)


def encode(ids: Iterable[int]) -> list[str]:
    """``ids`` as payloads of at most :data:`MOST_PAYLOAD` bytes, space-separated."""
    payloads: list[str] = []
    chunk: list[str] = []
    size = 0
    for pk in ids:
        text = str(pk)
        if chunk and size + len(text) + 1 > MOST_PAYLOAD:
            payloads.append(" ".join(chunk))
            chunk, size = [], 0
        chunk.append(text)
        size += len(text) + 1
    if chunk:
        payloads.append(" ".join(chunk))
    return payloads


def decode(payload: str | bytes) -> set[int]:
    """The ids a payload of :func:`encode` names (what else is in it is left out)."""
    text = payload.decode(errors="replace") if isinstance(payload, bytes) else payload
    return {int(word) for word in text.split() if word.isascii() and word.isdigit()}
