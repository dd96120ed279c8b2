"""Pausing queues: workers stop claiming from a paused queue within a second, while
its running jobs finish and new jobs can still be enqueued on it.

The paused queues are rows of a small table. A worker reads it at most once a second
(``PausedQueues``) and leaves those queues out of its claim; while nothing is paused
the claim is the very statement it is otherwise. On PostgreSQL a pause or resume also
sends a ``NOTIFY``, so an idle worker takes a resumed queue's jobs at once."""

from __future__ import annotations

import time

from django.db import transaction

from django_sqlqueue.conf import conf
from django_sqlqueue.db import charsets
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import PausedQueue
from django_sqlqueue.rules.queues import queue_name_problem, unlisted_queues_problem

#: The payload of the notification a pause or resume sends: the paused queues changed.
QUEUES_CHANGED = "queues"
#: A worker's paused set is at most this old when it claims.
REFRESH_SECONDS = 1.0


def pause_queue(name: str, reason: str = "") -> bool:
    """Stop workers claiming from queue ``name`` (within a second); True if it was not
    paused already. Pausing a paused queue changes nothing, not even its reason."""
    reason = reason[:255]
    alias = _checked(name, reason=reason)
    with transaction.atomic(using=alias):
        _, created = PausedQueue.objects.using(alias).get_or_create(
            queue=name, defaults={"reason": reason, "paused_at": DatabaseNow()}
        )
        if created:
            engine_for(alias).notify(QUEUES_CHANGED)
    return created


def resume_queue(name: str) -> bool:
    """Let workers claim from queue ``name`` again; True if it was paused."""
    alias = _checked(name)
    with transaction.atomic(using=alias):
        deleted, _ = PausedQueue.objects.using(alias).filter(queue=name).delete()
        if deleted:
            engine_for(alias).notify(QUEUES_CHANGED)
    return bool(deleted)


def paused_queues(using: str | None = None) -> dict[str, PausedQueue]:
    """Every paused queue by name, read on ``using``, else on the queue's database."""
    return {paused.queue: paused for paused in PausedQueue.objects.using(queue_db(PausedQueue, using))}


def _checked(name: str, **texts: str) -> str:
    """The alias of the paused queues' database, once ``name`` is a queue's and it and
    ``texts`` (other columns' text) are what that database can store: a character
    outside a MySQL table's or connection's character set would fail the statement
    with a raw error or be written as ``?``."""
    if problem := queue_name_problem(name) or unlisted_queues_problem([name], conf.SQLQUEUE_QUEUES):
        raise ValueError(f"{problem}.")
    alias = queue_db(PausedQueue)
    if problem := charsets.unstorable(PausedQueue, alias, {"queue": name, **texts}):
        raise ValueError(f"Cannot store the pause of queue {name!r}: {problem}.")
    return alias


class PausedQueues:
    """A worker's view of the paused queues: read again when it is a second old, or at
    once when a ``NOTIFY`` said they changed."""

    def __init__(self) -> None:
        self.names: frozenset[str] = frozenset()
        self.read_at: float | None = None

    def current(self, *, changed: bool = False) -> frozenset[str]:
        """The paused queues as of at most ``REFRESH_SECONDS`` ago (now, if ``changed``)."""
        now = time.monotonic()
        if changed or self.read_at is None or now - self.read_at >= REFRESH_SECONDS:
            alias = queue_db(PausedQueue)
            self.names = frozenset(PausedQueue.objects.using(alias).values_list("queue", flat=True))
            self.read_at = now
        return self.names
