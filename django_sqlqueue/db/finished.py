"""Telling those who wait for jobs (``db/waiting.py``) that they finished: the ids of
the jobs a finish brought to a final status, as ``NOTIFY`` payloads on PostgreSQL's
channel of finished jobs (sent in the finish's transaction, delivered as it commits),
and as datagrams to the waiters' sockets on this host elsewhere (sent once it commits).

One statement (or a few datagrams) per finish, however many jobs it wrote: a batch's
outcomes are one announcement. Where nobody waits on this host (no waiters' folder, or
no socket in it) a finish on SQLite or MySQL/MariaDB sends nothing; PostgreSQL cannot
tell, and always notifies."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import transaction

from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.wakeup import send_datagrams
from django_sqlqueue.rules.lifecycle import FINISHED

if TYPE_CHECKING:
    from django_sqlqueue.db.finishing import Ended

#: The longest payload, in bytes: below PostgreSQL's limit of 8,000, and a datagram any
#: system takes.
MOST_PAYLOAD = 4000


def final_ids(ended: Iterable[Ended]) -> list[int]:
    """The ids of the jobs among the outcomes a finish wrote (``ended``) that reached a
    final status (not a retry, nor a snooze)."""
    return [outcome.job.pk for outcome in ended if outcome.status in FINISHED]


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
