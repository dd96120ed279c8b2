"""What every maintenance service shares: it runs one turn when it is due, and each turn
says how long until the next, so that each keeps its own pace (a backlog sooner, a
quiet table later) while the supervisor only ticks them."""

from __future__ import annotations

from abc import ABC, abstractmethod


class Service(ABC):
    """One concern of the maintenance lease's holder (``maintenance/__init__.py``).

    ``run_due(now)`` runs a turn when ``now`` (``time.monotonic()``) has reached the
    service's next turn; ``due_now`` makes it due at once (a supervisor that takes the
    lease over does at once what the previous holder had due). A turn never raises
    for a database that is away: it logs and tries again at its next turn."""

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
        """Run a turn if one is due at ``now``; whether it ran."""
        if now < self.next_at:
            return False
        self.next_at = now + self.run(now)
        return True

    def due_now(self, now: float) -> None:
        self.next_at = now
