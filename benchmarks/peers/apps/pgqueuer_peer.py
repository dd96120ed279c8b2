"""pgqueuer: its factory on an asyncpg connection, as its docs write one; the worker is
``pgq run apps.pgqueuer_peer:create_pgqueuer --mode drain``; enqueue by its synchronous
queries on a psycopg connection in autocommit. (1.6.0's ``pgq run`` needs typer < 0.20.)"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import psycopg
from pgqueuer import PgQueuer
from pgqueuer.db import AsyncpgDriver, SyncPsycopgDriver
from pgqueuer.models import Job
from pgqueuer.queries import SyncQueries

from apps.common import dsn, timed


@asynccontextmanager
async def create_pgqueuer() -> AsyncIterator[PgQueuer]:
    connection = await asyncpg.connect(dsn())
    pgq = PgQueuer(AsyncpgDriver(connection))

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        """Does nothing: the benchmark times the queue, not the work."""

    try:
        yield pgq
    finally:
        await connection.close()


def setup() -> None:
    subprocess.run([str(Path(sys.executable).with_name("pgq")), "--pg-dsn", dsn(), "install"], check=True)


def enqueue(count: int) -> float:
    with psycopg.connect(dsn(), autocommit=True) as connection:
        queries = SyncQueries(SyncPsycopgDriver(connection))
        return timed(lambda: queries.enqueue("noop", None), count)
