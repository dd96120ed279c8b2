"""The harness's host for our three databases: its own Django host, with a commit
counter that works on SQLite and MariaDB too, a breaker for the receivers of the
worker's signals, and a breaker that loses commits' replies (its Django host has none).

The harness's Django commit counter reads PostgreSQL's transaction ids, so it serves
PostgreSQL only: there it is used as shipped. On the other two, :func:`counting_killer`
counts what Django commits (an ``atomic`` block's ``commit()``) and every write made in
autocommit that changed rows, on the calling thread's default connection: the worker's
main thread, which claims, finishes, registers and unregisters. A task's own writes, on
its job thread's connection, are the task's effects, not the worker's commits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, InterfaceError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from due_work_harness import Host
from due_work_harness.integrations.django import django_host
from due_work_harness.integrations.django.commits import DjangoWorker, django_worker_killer
from due_work_harness.integrations.django.receivers import django_receiver_breaker
from due_work_harness.integrations.django.writes import leading_keyword
from due_work_harness.worker_death import LostCommitReplies

from django_sqlqueue import signals
from django_sqlqueue.backends.compat import task_finished, task_started

#: The statements that write rows: in autocommit, each one that changed a row is a commit.
WRITES = frozenset({"INSERT", "UPDATE", "DELETE", "REPLACE"})

#: Every signal a worker sends around a job: Django's Tasks' and ours.
WORKER_SIGNALS = (task_started, task_finished, signals.job_started, signals.job_finished, *signals.job_ended.values())


@contextmanager
def _counting(target: BaseDatabaseWrapper, counter: Any) -> Iterator[None]:
    """Call ``counter.committed()`` after each commit of ``target``: an ``atomic`` block's
    ``commit()``, or a write in autocommit that changed a row."""
    original = type(target).commit
    refuse_if_dead = getattr(counter, "refuse_if_dead", lambda: None)  # only a worker can die

    def commit(connection: BaseDatabaseWrapper) -> Any:
        if connection is not target:
            return original(connection)
        refuse_if_dead()
        result = original(connection)
        counter.committed()
        return result

    def statement(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if getattr(counter, "dead", False) and leading_keyword(sql) == "ROLLBACK":
            return execute(sql, params, many, context)  # a dead session is rolled back by the server anyway
        refuse_if_dead()
        autocommit = target.get_autocommit() and not target.in_atomic_block
        result = execute(sql, params, many, context)
        if autocommit and leading_keyword(sql) in WRITES and context["cursor"].rowcount > 0:
            counter.committed()
        return result

    with pytest.MonkeyPatch.context() as patch, target.execute_wrapper(statement):
        patch.setattr(type(target), "commit", commit)
        yield


@contextmanager
def counting_killer(kill_after: int | None) -> Iterator[DjangoWorker]:
    """The harness's ``WorkerKiller`` for any database: die right after commit ``kill_after``
    (the harness's own ``DjangoWorker`` drops the after-commit callbacks and refuses every
    later statement); a dead worker's connection is closed, as its process's would be."""
    target = connections[DEFAULT_DB_ALIAS]
    worker = DjangoWorker(target, kill_after)
    try:
        with _counting(target, worker):
            yield worker
    finally:
        if worker.dead:
            target.close()


def _lost_reply(count: int) -> Exception:
    """The error a driver raises when the connection drops before the commit's answer."""
    return InterfaceError(f"connection lost before the reply to commit {count} (due-work-harness)")


@contextmanager
def reply_breaker(lose_at: int | None) -> Iterator[LostCommitReplies]:
    """The harness's ``ReplyBreaker``: commit ``lose_at`` lands, then the worker gets
    ``InterfaceError``, as from a connection dropped between the server applying the
    write and the worker reading its answer. The connection itself stays open: what the
    worker does next is its own handling of a database error, as after a real drop."""
    target = connections[DEFAULT_DB_ALIAS]
    replies = LostCommitReplies(lose_at, _lost_reply)
    with _counting(target, replies):
        yield replies


def our_host() -> Host:
    """The harness's Django host for ``django_sqlqueue``, on this test's database."""
    host = django_host({"django_sqlqueue"}, receiver_breaker=django_receiver_breaker(*WORKER_SIGNALS))
    killer = django_worker_killer if connections[DEFAULT_DB_ALIAS].vendor == "postgresql" else counting_killer
    return host.model_copy(update={"worker_killer": killer, "reply_breaker": reply_breaker})
