"""Work done at once from several threads, each on its own connection: for the tests
of what claimers racing for one lock may take, and of schedulers ticking together."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connections

from django_sqlqueue.models import Job

T = TypeVar("T")


def at_once(threads: int, work: Callable[[int], T]) -> list[T]:
    """What ``work(index)`` returned in each of ``threads`` threads, all released at once
    by a barrier, in the order they finished."""
    start = threading.Barrier(threads)
    results: list[T] = []

    def run(index: int) -> None:
        try:
            start.wait(30)
            results.append(work(index))
        finally:
            connections.close_all()

    started = [threading.Thread(target=run, args=(index,)) for index in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join(60)
    return results


def claim_at_once(claimers: int, limit: int) -> list[int]:
    """How many jobs each of ``claimers`` threads took, all released at once by a barrier."""
    return at_once(claimers, lambda index: len(Job.objects.claim(worker_id=f"racer-{index}", limit=limit)))
