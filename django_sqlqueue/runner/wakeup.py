"""How an idle worker waits for work: a PostgreSQL notification, or an adaptive poll."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from typing import Any, cast

from django.db import DatabaseError, connections

from django_sqlqueue.conf import conf
from django_sqlqueue.db.notifying import QUEUES_CHANGED, listening_connection, notifies, notify
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job

logger = logging.getLogger(__name__)

SHORTEST_WAIT = 0.05
#: A worker that has listened for this long without hearing its own probe polls instead.
PROBE_SECONDS = 2.0


class Waiter:
    """Waits between two claims that found nothing: from 50 ms, doubling up to
    ``SQLQUEUE_POLL_INTERVAL``, back to 50 ms once work turns up; on PostgreSQL a
    ``NOTIFY`` from a committed enqueue, pause or resume ends the wait at once.

    ``queues_changed`` tells the worker that a notification said the paused queues
    changed; ``wait(longest=...)`` caps the wait (while a queue is paused, a resume
    must be seen within a second where no notification comes).

    Behind PgBouncer in transaction mode ``LISTEN`` succeeds but nothing is ever heard
    (the session that listened goes back to the pool). So after ``LISTEN`` the worker
    sends itself a probe, a ``NOTIFY`` with a payload of its own: if it has not heard it
    after ``PROBE_SECONDS``, it logs one warning and polls from then on."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
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
        if notifies(self.alias):
            self._listener()
            self.probe = f"probe:{uuid.uuid4().hex}"
            self.probe_deadline = time.monotonic() + PROBE_SECONDS
            notify(self.alias, self.probe)

    def found_work(self) -> None:
        self.delay = SHORTEST_WAIT

    def wait(self, longest: float | None = None) -> None:
        poll = conf.SQLQUEUE_POLL_INTERVAL if longest is None else min(longest, conf.SQLQUEUE_POLL_INTERVAL)
        timeout, self.delay = min(self.delay, poll), min(self.delay * 2, poll)
        if not notifies(self.alias) or self.deaf:
            self.stop.wait(timeout)
            return
        try:
            listener = self._listener()
            # Its own probe is no reason to wake: it waits on for the rest of the time.
            for heard in listener.notifies(timeout=poll):
                if self._heard(heard):
                    break
            # Drain what else arrived, so the next wait does not return at once.
            for heard in listener.notifies(timeout=0):
                self._heard(heard)
            if self.probe is not None and time.monotonic() > self.probe_deadline:
                self._go_deaf(poll)
        # The listener is the driver's own connection: its errors are the driver's, not Django's.
        except (DatabaseError, OSError, cast(Any, connections[self.alias]).Database.Error) as error:
            logger.warning("Lost the LISTEN connection (%s); polling until it is back.", error)
            self.close()
            self.stop.wait(timeout)

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
            self.listener = listening_connection(self.alias)
        return self.listener.connection

    def close(self) -> None:
        if self.listener is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to keep
                self.listener.close()
            self.listener = None
