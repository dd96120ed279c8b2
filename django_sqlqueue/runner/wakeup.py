"""How an idle worker waits for work: a PostgreSQL notification, or an adaptive poll."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, cast

from django.db import DatabaseError, connections

from django_sqlqueue.conf import conf
from django_sqlqueue.db.notifying import CHANNEL, QUEUES_CHANGED
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job

logger = logging.getLogger(__name__)

SHORTEST_WAIT = 0.05


class Waiter:
    """Waits between two claims that found nothing: from 50 ms, doubling up to
    ``SQLQUEUE_POLL_INTERVAL``, back to 50 ms once work turns up; on PostgreSQL a
    ``NOTIFY`` from a committed enqueue, pause or resume ends the wait at once.

    ``queues_changed`` tells the worker that a notification said the paused queues
    changed; ``wait(longest=...)`` caps the wait (while a queue is paused, a resume
    must be seen within a second where no notification comes)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        # Where the enqueues that notify are committed: a replica gets no notifications.
        self.alias = queue_db(Job)
        self.delay = SHORTEST_WAIT
        self.listener: Any = None
        self.queues_changed = False

    def listen(self) -> None:
        """Start listening before the first claim, so no notification falls between the two."""
        if connections[self.alias].vendor == "postgresql":
            self._listener()

    def found_work(self) -> None:
        self.delay = SHORTEST_WAIT

    def wait(self, longest: float | None = None) -> None:
        poll = conf.SQLQUEUE_POLL_INTERVAL if longest is None else min(longest, conf.SQLQUEUE_POLL_INTERVAL)
        timeout, self.delay = min(self.delay, poll), min(self.delay * 2, poll)
        if connections[self.alias].vendor != "postgresql":
            self.stop.wait(timeout)
            return
        try:
            listener = self._listener()
            for notify in listener.notifies(timeout=poll, stop_after=1):
                self.delay = SHORTEST_WAIT
                self._heard(notify)
            # Drain what else arrived, so the next wait does not return at once.
            for notify in listener.notifies(timeout=0):
                self._heard(notify)
        # The listener is the driver's own connection: its errors are the driver's, not Django's.
        except (DatabaseError, OSError, cast(Any, connections[self.alias]).Database.Error) as error:
            logger.warning("Lost the LISTEN connection (%s); polling until it is back.", error)
            self.close()
            self.stop.wait(timeout)

    def _heard(self, notify: Any) -> None:
        if notify.payload == QUEUES_CHANGED:
            self.queues_changed = True

    def take_queues_changed(self) -> bool:
        """Whether a notification said the paused queues changed since the last call."""
        changed, self.queues_changed = self.queues_changed, False
        return changed

    def _listener(self) -> Any:
        if self.listener is None:
            wrapper = connections.create_connection(self.alias)
            wrapper.ensure_connection()
            wrapper.set_autocommit(True)
            self.listener = wrapper
            wrapper.connection.execute(f"LISTEN {CHANNEL}")
        return self.listener.connection

    def close(self) -> None:
        if self.listener is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to keep
                self.listener.close()
            self.listener = None
