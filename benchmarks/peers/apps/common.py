"""What every peer's module shares: where its scratch database is, and how its enqueue
loop is timed. Each peer's module has ``setup()`` (its schema, as its docs install it)
and ``enqueue(count) -> seconds`` (one job per call, each committed on its own, as an
application enqueues from its requests; connecting is done before the clock starts)."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable


def database() -> str:
    return os.environ["PEERS_DB"]


def dsn() -> str:
    env = os.environ.get
    server = f"{env('PEERS_USER', 'postgres')}@{env('PEERS_HOST', '127.0.0.1')}:{env('PEERS_PORT', '5432')}"
    return f"postgresql://{server}/{database()}"


def timed(enqueue_one: Callable[[], object], count: int) -> float:
    began = time.perf_counter()
    for _ in range(count):
        enqueue_one()
    return time.perf_counter() - began


async def timed_async(enqueue_one: Callable[[], Awaitable[object]], count: int) -> float:
    began = time.perf_counter()
    for _ in range(count):
        await enqueue_one()
    return time.perf_counter() - began
