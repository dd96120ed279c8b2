"""Waiting for a job to finish: its row read again each time news of finished jobs
names it (a ``NOTIFY`` on PostgreSQL's channel of finished jobs, a datagram on this
host's waiters' socket elsewhere; ``db/finished.py`` sends them), and in any case after
a wait that doubles from a few milliseconds up to half a second: the fallback for a
finish no news told of (one on another host without ``NOTIFY``, a cancel of a job not
yet claimed, a rescue).

The news comes on a connection (or socket) of the wait's own, closed when it returns;
the row is read in autocommit, so that nothing is held while it waits."""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connections
from django.db.transaction import TransactionManagementError

from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.finished import decode
from django_sqlqueue.db.wakeup import say_once
from django_sqlqueue.db.wakeup_socket import bind, unbind
from django_sqlqueue.exceptions import WaitTimeout
from django_sqlqueue.rules.lifecycle import FINISHED

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from django_sqlqueue.db.schema.table import JobT

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: The first wait between two reads of the row, in seconds, doubled after each up to :data:`LONGEST_WAIT`.
SHORTEST_WAIT = 0.005
LONGEST_WAIT = 0.5


def wait_finished(jobs: QuerySet[JobT], pk: int, timeout: float | None) -> JobT | None:
    """The job ``pk`` of ``jobs`` once it is ``SUCCESSFUL``, ``FAILED`` or ``CANCELLED``;
    None once its row is gone. Raises :class:`~django_sqlqueue.exceptions.WaitTimeout`
    after ``timeout`` seconds (None: never), and ``TransactionManagementError`` inside a
    transaction, whose snapshot (MySQL/MariaDB) would never see the end, and which
    would be held open all the while."""
    if connections[jobs.db].in_atomic_block:
        raise TransactionManagementError(
            "Waiting for a job inside a transaction would hold it open, and may never see the job finish: "
            "wait outside transaction.atomic()."
        )
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = SHORTEST_WAIT
    # Listening before the first read: no news falls between the two.
    news = FinishNews.open(jobs.db)
    try:
        while True:
            job = jobs.filter(pk=pk).first()
            if job is None or job.status in FINISHED:
                return job
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WaitTimeout(job, timeout)
            if not news.wait(pk, delay if left is None else min(delay, left)):
                delay = min(delay * 2, LONGEST_WAIT)
    finally:
        news.close()


class FinishNews:
    """Where a wait hears which jobs finished: a connection of its own that listens
    (PostgreSQL), a socket in this host's waiters' folder (SQLite, MySQL/MariaDB), or
    nothing (then it only polls)."""

    def __init__(self, alias: str, listener: Any = None, sock: socket.socket | None = None) -> None:
        self.alias = alias
        self.listener = listener
        self.sock = sock

    @classmethod
    def open(cls, alias: str) -> FinishNews:
        """What ``alias``'s finishes are heard by; polling alone where nothing can be made."""
        database = engine_for(alias)
        if database.notifies:
            return cls(alias, listener=database.listening_connection(finishes=True))
        try:
            return cls(alias, sock=bind(alias, waiting=True))
        except OSError as error:
            say_once(logger, "No waiters' socket for database %r (%s): waits for jobs poll.", alias, error)
            return cls(alias)

    def wait(self, pk: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; whether news named ``pk`` (news of others is read and dropped)."""
        if self.listener is not None:
            return self._listen(pk, timeout)
        if self.sock is None:
            time.sleep(timeout)
            return False
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.sock], [], [], left)
            if readable and pk in self._received():
                return True
        return False

    def _listen(self, pk: int, timeout: float) -> bool:
        connection: Any = self.listener.connection
        try:
            for notify in connection.notifies(timeout=timeout):
                if pk in decode(notify.payload):
                    return True
        # The listener is the driver's own connection: its errors are the driver's, not Django's.
        except (DatabaseError, OSError, cast(Any, connections[self.alias]).Database.Error):
            self.close()  # polls from now on
        return False

    def _received(self) -> set[int]:
        """The ids of every datagram waiting on the socket."""
        heard: set[int] = set()
        assert self.sock is not None
        with contextlib.suppress(BlockingIOError):
            while True:
                heard |= decode(self.sock.recv(65536))
        return heard

    def close(self) -> None:
        """Close what it listens on."""
        if self.listener is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to keep
                self.listener.close()
            self.listener = None
        if self.sock is not None:
            unbind(self.sock)
            self.sock = None


def in_thread(wait: Callable[_P, _R]) -> Callable[_P, Awaitable[_R]]:
    """``wait`` for async code: run in a thread of its own, not the one Django's async
    ORM calls share (a wait of seconds would hold up the request's other queries); the
    connections it opened there are closed after, so none is left in the pool's thread."""

    def closing(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return wait(*args, **kwargs)
        finally:
            connections.close_all()

    return sync_to_async(closing, thread_sensitive=False)
