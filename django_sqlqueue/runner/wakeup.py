"""How an idle worker waits for work: a PostgreSQL notification, a datagram from an
enqueue on this host (``db/wakeup.py``, ``db/wakeup_socket.py``), or an adaptive poll."""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any, cast

from django.db import DatabaseError, connections

from django_sqlqueue.conf import conf
from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.pausing import QUEUES_CHANGED
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.db.wakeup_socket import bind, touch, unbind, wakes
from django_sqlqueue.models import Job

logger = logging.getLogger(__name__)

SHORTEST_WAIT = 0.05
#: A worker that has listened for this long without hearing its own probe polls instead.
PROBE_SECONDS = 2.0
#: How often an idle worker touches its wake-up socket's file, and binds another if it is gone.
KEEP_SECONDS = 60.0


class Waiter:
    """Waits between two claims that found nothing: from 50 ms, doubling up to
    ``SQLQUEUE_POLL_INTERVAL``, back to 50 ms once work turns up; on PostgreSQL a
    ``NOTIFY`` from a committed enqueue, pause or resume ends the wait at once; on
    SQLite and MySQL/MariaDB a datagram from an enqueue committed on this host does
    (:class:`LocalWakeupSocket`), for ``queues`` (None: every queue).

    ``queues_changed`` tells the worker that a notification said the paused queues
    changed; ``wait(longest=...)`` caps the wait (while a queue is paused, a resume
    must be seen within a second where no notification comes).

    Behind PgBouncer in transaction mode ``LISTEN`` succeeds but nothing is ever heard
    (the session that listened goes back to the pool). So after ``LISTEN`` the worker
    sends itself a probe, a ``NOTIFY`` with a payload of its own: if it has not heard it
    after ``PROBE_SECONDS``, it logs one warning and polls from then on."""

    def __init__(self, stop: threading.Event, queues: Sequence[str] | None = None) -> None:
        self.stop = stop
        self.queues = queues
        self.local_socket: LocalWakeupSocket | None = None
        # Where the enqueues that notify are committed: a replica gets no notifications.
        self.alias = queue_db(Job)
        self.delay = SHORTEST_WAIT
        self.listener: Any = None
        self.queues_changed = False
        #: Its own probe's payload, until it is heard (then None), and when to give up on it.
        self.probe: str | None = None
        self.probe_deadline = 0.0
        #: Whether notifications turned out not to arrive here: it only polls.
        self.deaf = False

    def listen(self) -> None:
        """Start listening before the first claim, so no notification falls between the
        two, and send the probe (one statement: the first claim does not wait for it)."""
        if engine_for(self.alias).notifies:
            self._listener()
            self.probe = f"probe:{uuid.uuid4().hex}"
            self.probe_deadline = time.monotonic() + PROBE_SECONDS
            engine_for(self.alias).notify(self.probe)
        else:
            self.local_socket = LocalWakeupSocket.open(self.alias, self.stop, self.queues)

    def found_work(self) -> None:
        self.delay = SHORTEST_WAIT

    def wait(self, longest: float | None = None) -> bool:
        """Wait until there may be work; whether news (a notification, a datagram) said so,
        rather than the time running out or a stop.

        A datagram comes only from enqueues on this host: the local wake-up socket's wait backs off
        like a poll, for the jobs enqueued elsewhere."""
        poll = conf.SQLQUEUE_POLL_INTERVAL if longest is None else min(longest, conf.SQLQUEUE_POLL_INTERVAL)
        timeout, self.delay = min(self.delay, poll), min(self.delay * 2, poll)
        if self.local_socket is not None:
            woken = self.local_socket.wait(timeout)
            if woken:
                self.delay = SHORTEST_WAIT
            return woken
        if not engine_for(self.alias).notifies or self.deaf:
            self.stop.wait(timeout)
            return False
        news = False
        try:
            listener = self._listener()
            # Its own probe is no reason to wake: it waits on for the rest of the time.
            for heard in listener.notifies(timeout=poll):
                if self._heard(heard):
                    news = True
                    break
            # Drain what else arrived, so the next wait does not return at once.
            for heard in listener.notifies(timeout=0):
                news = self._heard(heard) or news
            if self.probe is not None and time.monotonic() > self.probe_deadline:
                self._go_deaf(poll)
        # The listener is the driver's own connection: its errors are the driver's, not Django's.
        except (DatabaseError, OSError, cast(Any, connections[self.alias]).Database.Error) as error:
            logger.warning("Lost the LISTEN connection (%s); polling until it is back.", error)
            self.close()
            self.stop.wait(timeout)
        return news

    def _heard(self, notify: Any) -> bool:
        """Take in one notification; whether it is news (work, or a pause or resume)."""
        if notify.payload == self.probe:
            self.probe = None  # notifications arrive: LISTEN works here
            return False
        self.delay = SHORTEST_WAIT
        if notify.payload == QUEUES_CHANGED:
            self.queues_changed = True
        return True

    def _go_deaf(self, poll: float) -> None:
        logger.warning(
            "LISTEN on database %r hears no notifications (its own probe did not arrive within %g s; PgBouncer "
            "in transaction mode?): polling every %g s instead.",
            self.alias,
            PROBE_SECONDS,
            poll,
        )
        self.deaf = True
        self.close()

    def take_queues_changed(self) -> bool:
        """Whether a notification said the paused queues changed since the last call."""
        changed, self.queues_changed = self.queues_changed, False
        return changed

    def _listener(self) -> Any:
        if self.listener is None:
            self.listener = engine_for(self.alias).listening_connection()
        return self.listener.connection

    def close(self) -> None:
        if self.local_socket is not None:
            self.local_socket.close()
            self.local_socket = None
        if self.listener is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to keep
                self.listener.close()
            self.listener = None


class LocalWakeupSocket:
    """A worker's socket for the datagrams of enqueues committed on this host, and how it
    waits on it: until a datagram names one of its queues, the timeout passes, or ``stop``
    is set (a thread of its own turns the event into a byte on a socket pair, which the
    wait watches too, so a SIGTERM ends it at once)."""

    def __init__(self, alias: str, sock: socket.socket, stop: threading.Event, queues: Sequence[str] | None) -> None:
        self.alias = alias
        self.sock = sock
        self.queues = queues
        #: When to touch its socket file next (:meth:`_keep`).
        self.keep_at = time.monotonic() + KEEP_SECONDS
        self.stopped, rings_stop = socket.socketpair()
        threading.Thread(target=_ring_on, args=(stop, rings_stop), name="sqlqueue-wakeup", daemon=True).start()

    @classmethod
    def open(cls, alias: str, stop: threading.Event, queues: Sequence[str] | None) -> LocalWakeupSocket | None:
        """The local wake-up socket of ``alias``'s workers on this host; None where there is none, or
        where it cannot be made (said once, as a warning): the worker polls."""
        try:
            sock = bind(alias)
        except OSError as error:
            logger.warning("No wake-up socket for database %r (%s): idle workers poll.", alias, error)
            return None
        return None if sock is None else cls(alias, sock, stop, queues)

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; whether a datagram for its queues ended it."""
        deadline = time.monotonic() + timeout
        if deadline >= self.keep_at:
            self._keep()
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.sock, self.stopped], [], [], left)
            if self.stopped in readable:
                return False
            if self.sock in readable and self._has_news():
                return True
        return False

    def _keep(self) -> None:
        """Touch its socket file, so that a cleaner of old files (systemd-tmpfiles in
        ``/tmp``) leaves it alone; if it was removed all the same, bind another."""
        self.keep_at = time.monotonic() + KEEP_SECONDS
        if touch(self.sock):
            return
        logger.warning("The wake-up socket %s was removed: binding another.", self.sock.getsockname())
        try:
            sock = bind(self.alias)
        except OSError as error:
            logger.warning("No wake-up socket for database %r (%s): idle workers poll.", self.alias, error)
            return
        if sock is not None:
            unbind(self.sock)
            self.sock = sock

    def _has_news(self) -> bool:
        """Read every datagram waiting; whether one was for its queues."""
        news = False
        with contextlib.suppress(BlockingIOError):
            while True:
                news = wakes(self.sock.recv(4096), self.queues) or news
        return news

    def close(self) -> None:
        unbind(self.sock)
        self.stopped.close()


def _ring_on(stop: threading.Event, rings: socket.socket) -> None:
    """Once ``stop`` is set, make the stop end of the pair readable (then close it)."""
    stop.wait()
    with rings, contextlib.suppress(OSError):
        rings.send(b"!")
