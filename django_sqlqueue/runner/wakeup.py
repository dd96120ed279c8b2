"""How an idle worker waits for work: a PostgreSQL notification, or an adaptive poll."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, cast

from django.db import DatabaseError, connections

from django_sqlqueue.conf import conf
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job

logger = logging.getLogger(__name__)

CHANNEL = "sqlqueue"  # Sent by the trigger of migration 0003 on every INSERT.
SHORTEST_WAIT = 0.05


class Waiter:
    """Waits between two claims that found nothing: from 50 ms, doubling up to
    ``SQLQUEUE_POLL_INTERVAL``, back to 50 ms once work turns up; on PostgreSQL a
    ``NOTIFY`` from a committed enqueue ends the wait at once."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        # Where the enqueues that notify are committed: a replica gets no notifications.
        self.alias = queue_db(Job)
        self.delay = SHORTEST_WAIT
        self.listener: Any = None

    def listen(self) -> None:
        """Start listening before the first claim, so no notification falls between the two."""
        if connections[self.alias].vendor == "postgresql":
            self._listener()

    def found_work(self) -> None:
        self.delay = SHORTEST_WAIT

    def wait(self) -> None:
        timeout, self.delay = self.delay, min(self.delay * 2, conf.SQLQUEUE_POLL_INTERVAL)
        if connections[self.alias].vendor != "postgresql":
            self.stop.wait(timeout)
            return
        try:
            listener = self._listener()
            for _ in listener.notifies(timeout=conf.SQLQUEUE_POLL_INTERVAL, stop_after=1):
                self.delay = SHORTEST_WAIT
            # Drain what else arrived, so the next wait does not return at once.
            for _ in listener.notifies(timeout=0):
                pass
        # The listener is the driver's own connection: its errors are the driver's, not Django's.
        except (DatabaseError, OSError, cast(Any, connections[self.alias]).Database.Error) as error:
            logger.warning("Lost the LISTEN connection (%s); polling until it is back.", error)
            self.close()
            self.stop.wait(timeout)

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
