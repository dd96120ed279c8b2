"""chancy: one ``Queue("default")`` with its defaults (its process-pool executor,
concurrency by CPU count); the worker is ``chancy --app apps.chancy_peer.chancy worker
start``, stopped by SIGTERM; enqueue by its synchronous ``sync_push``."""

from __future__ import annotations

import asyncio

from chancy import Chancy, Job, Queue

from apps.common import dsn, timed

chancy = Chancy(dsn())


def noop() -> None:
    """Does nothing: the benchmark times the queue, not the work."""


async def _setup() -> None:
    async with chancy:
        await chancy.migrate()
        await chancy.declare(Queue("default"), upsert=True)


def setup() -> None:
    asyncio.run(_setup())


def enqueue(count: int) -> float:
    with chancy:
        return timed(lambda: chancy.sync_push(Job.from_func(noop)), count)
