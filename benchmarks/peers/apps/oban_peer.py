"""Oban for Python: a worker class on the ``default`` queue, as its Quick Start writes one
(0.7's ``@job`` on a function without arguments fails to enqueue); the worker is ``oban
start --queues default:10``, stopped by SIGTERM; enqueue by the worker's ``enqueue()`` on
an Oban instance that runs no queue."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from oban import Oban, worker

from apps.common import dsn, timed_async


@worker(queue="default")
class Noop:
    async def process(self, job: object) -> None:
        """Does nothing: the benchmark times the queue, not the work."""


def setup() -> None:
    subprocess.run([str(Path(sys.executable).with_name("oban")), "install", "--dsn", dsn()], check=True)


async def _enqueue(count: int) -> float:
    pool = await Oban.create_pool(dsn())
    try:
        async with Oban(pool=pool):
            return await timed_async(lambda: Noop.enqueue({}), count)
    finally:
        await pool.close()


def enqueue(count: int) -> float:
    return asyncio.run(_enqueue(count))
