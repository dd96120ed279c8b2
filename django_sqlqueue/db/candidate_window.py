"""How wide a MySQL/MariaDB claim reads, apart from the statements: the benchmark's
raw claim (``bench/raw``) uses it too, in processes that never set Django up."""

from __future__ import annotations


class CandidateWindow:
    """How many candidates a MySQL/MariaDB claim reads for each job it wants.

    Its candidates are read before they are locked, so claimers that read at once read
    the same first ones: one locks them, and the others found nothing to lock and read
    again, while the winner waited for a CPU they spun on (eight worker processes on two
    cores drained a third of what two did). After a claim lost candidates to another
    worker, the next reads twice as many, up to :attr:`MOST` times, and locks the first
    it can of them by id: claimers at once take different jobs among the first ones in
    claim order. Each claim that lost none reads half as many, down to what it wants,
    which it then takes in claim order."""

    #: The most candidates read for each job wanted.
    MOST = 8

    def __init__(self, model: object = None, connection: object = None) -> None:
        # Made per connection (by its engine): the model and connection name its claimer.
        self.per_job = 1

    def lost(self, ids: list[int], taken: list[int], limit: int) -> int:
        """How many of the candidates ``ids`` another worker took first, when this claim
        locked ``taken`` of them (``limit`` at most, the lowest ids it could): all it did
        not lock when it got fewer than ``limit``, else those below the highest it got.
        The window follows: wider after a loss, narrower after none."""
        if len(taken) < limit:
            lost = len(ids) - len(taken)
        else:
            highest = max(taken)
            lost = sum(1 for pk in ids if pk <= highest) - len(taken)
        if not lost:
            self.per_job = max(self.per_job // 2, 1)
        elif len(taken) < limit:
            self.per_job = min(self.per_job * 2, self.MOST)
        return lost
