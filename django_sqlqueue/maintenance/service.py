"""What every maintenance service shares: it runs one turn when it is due, and each turn
says how long until the next, so that each keeps its own pace (a backlog sooner, a
quiet table later) while the supervisor only ticks them."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod

from django.db import Error, close_old_connections

from django_sqlqueue.rules.user_code import contained

logger = logging.getLogger(__name__)


class Service(ABC):
    """One concern of the maintenance lease's holder (``maintenance/__init__.py``).

    ``run_due(now)`` runs a turn when ``now`` (``time.monotonic()``) has reached the
    service's next turn; ``due_now`` makes it due at once (a supervisor that takes the
    lease over does at once what the previous holder had due). A turn never raises,
    for a database that is away or anything else: it logs and tries again at its next
    turn."""

    #: What it does, as the documentation and the logs name it.
    name: str

    def __init__(self) -> None:
        self.next_at = 0.0

    @property
    @abstractmethod
    def interval(self) -> float:
        """Seconds between two turns while nothing is left over."""

    @abstractmethod
    def run(self, now: float) -> float:
        """One turn, begun at ``now``; the seconds from ``now`` until the next."""

    def run_due(self, now: float) -> bool:
        """Run a turn if one is due at ``now``; whether it ran. Whatever the turn raises
        (user code it calls: a signal's receiver, a hook) is logged and the turn tried
        again after ``interval``: the supervisor's loop, and the other services, go on."""
        if now < self.next_at:
            return False
        wait = self.interval
        with contained("The maintenance service %r", self.name, then=f"trying again in {wait:g} s"):
            wait = self.run(now)
        self.next_at = now + wait
        return True

    def due_now(self, now: float) -> None:
        self.next_at = now


class SweepService(Service):
    """A service whose turn is one sweep of up to ``limit`` rows (:meth:`sweep`): the
    next turn comes ``backlog_interval`` later while a full sweep says a backlog lasts,
    ``interval`` later otherwise; a database error is logged and tried again at the next
    ``interval``. Its connections are closed after each turn, as the runner's are."""

    #: The most rows one sweep handles.
    limit: int
    #: Seconds to the next turn after a full sweep.
    backlog_interval: float
    #: The log's words for a failed sweep ("Sweeping waiting jobs") and a done one
    #: (with ``%d``, how many: "Settled %d ...").
    failing: str
    done: str

    @abstractmethod
    def sweep(self) -> int:
        """One sweep: how many rows it handled."""

    def run(self, now: float) -> float:
        try:
            handled = self.sweep()
        except Error as error:
            logger.warning("%s failed (%s); trying again in %g s", self.failing, error, self.interval)
            return self.interval
        finally:
            close_old_connections()
        if handled:
            logger.info(self.done, handled)
        return self.backlog_interval if handled == self.limit else self.interval
