"""Claims made at once from several threads, each on its own connection: for the tests
of what claimers racing for one lock may take."""

from __future__ import annotations

import threading

from django.db import connections

from django_sqlqueue.models import Job


def claim_at_once(claimers: int, limit: int) -> list[int]:
    """How many jobs each of ``claimers`` threads took, all released at once by a barrier."""
    start = threading.Barrier(claimers)
    claimed: list[int] = []

    def claimer(index: int) -> None:
        try:
            start.wait(30)
            claimed.append(len(Job.objects.claim(worker_id=f"racer-{index}", limit=limit)))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claimer, args=(index,)) for index in range(claimers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return claimed
