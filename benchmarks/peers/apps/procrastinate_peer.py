"""procrastinate: an ``App`` on its psycopg connector, an async no-op task; the worker is
``procrastinate --app=apps.procrastinate_peer.app worker --one-shot``."""

from __future__ import annotations

import procrastinate

from apps.common import dsn, timed

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn()))


@app.task(name="noop")
async def noop() -> None:
    """Does nothing: the benchmark times the queue, not the work."""


def setup() -> None:
    with app.open():
        app.schema_manager.apply_schema()


def enqueue(count: int) -> float:
    with app.open():
        return timed(noop.defer, count)
