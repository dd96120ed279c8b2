"""The ceiling: the benchmark's work done in raw SQL through the driver, no Django, no
Python per job beyond building the statement, on the same table and indexes."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper

INSERT_BATCH = 1000


@dataclass(frozen=True)
class RawDatabase:
    """How to reach the jobs table with the bare driver; picklable for worker processes."""

    vendor: str
    params: dict[str, Any]
    table: str
    use_tz: bool

    @classmethod
    def of(cls, connection: BaseDatabaseWrapper, table: str) -> RawDatabase:
        config = connection.settings_dict
        if connection.vendor == "postgresql":
            params: dict[str, Any] = {
                "dbname": config["NAME"],
                "host": config["HOST"] or None,
                "port": config["PORT"] or None,
                "user": config["USER"] or None,
                "password": config["PASSWORD"] or None,
            }
        elif connection.vendor == "mysql":
            params = {
                "db": config["NAME"],
                "host": config["HOST"] or "localhost",
                "port": int(config["PORT"] or 3306),
                "user": config["USER"],
                "passwd": config["PASSWORD"],
                "charset": "utf8mb4",
            }
        else:
            params = {"database": str(config["NAME"])}
        return cls(connection.vendor, params, table, settings.USE_TZ)

    @contextmanager
    def connect(self) -> Iterator[Any]:
        if self.vendor == "postgresql":
            import psycopg

            connection: Any = psycopg.connect(**{k: v for k, v in self.params.items() if v is not None})
        elif self.vendor == "mysql":
            import MySQLdb

            connection = MySQLdb.connect(**self.params)
            connection.cursor().execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        else:
            import sqlite3

            connection = sqlite3.connect(self.params["database"], timeout=30, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
        try:
            yield connection
        finally:
            connection.close()

    @property
    def mark(self) -> str:
        return "?" if self.vendor == "sqlite" else "%s"

    @property
    def now(self) -> str:
        return {
            "postgresql": "STATEMENT_TIMESTAMP()",
            "mysql": "UTC_TIMESTAMP(6)" if self.use_tz else "CURRENT_TIMESTAMP(6)",
            "sqlite": "STRFTIME('%Y-%m-%d %H:%M:%f', 'now')",
        }[self.vendor]

    def begin(self, connection: Any) -> None:
        """SQLite takes the write lock up front, as the app's claim does."""
        if self.vendor == "sqlite":
            connection.execute("BEGIN IMMEDIATE")

    def commit(self, connection: Any) -> None:
        if self.vendor == "sqlite":
            connection.execute("COMMIT")
        else:
            connection.commit()

    def row_sql(self) -> str:
        m = self.mark
        return f"({m}, 'sqlqueue.noop', '[]', '{{}}', 0, 'READY', {self.now}, 0, 1, {self.now}, '', '[]')"

    def insert_sql(self, rows: int) -> str:
        columns = (
            "queue, task, args, kwargs, priority, status, run_at, attempts, max_attempts, enqueued_at, worker, errors"
        )
        return f"INSERT INTO {self.table} ({columns}) VALUES " + ", ".join([self.row_sql()] * rows)


def insert_one_per_transaction(database: RawDatabase, queue: str, count: int) -> float:
    """Jobs per second inserted one INSERT + COMMIT at a time."""
    with database.connect() as connection:
        cursor = connection.cursor()
        sql = database.insert_sql(1)
        began = time.perf_counter()
        for _ in range(count):
            database.begin(connection)
            cursor.execute(sql, (queue,))
            database.commit(connection)
        return count / (time.perf_counter() - began)


def insert_many_per_statement(database: RawDatabase, queue: str, count: int) -> float:
    """Jobs per second inserted in multi-row INSERTs of ``INSERT_BATCH`` rows, one transaction."""
    with database.connect() as connection:
        cursor = connection.cursor()
        began = time.perf_counter()
        database.begin(connection)
        for start in range(0, count, INSERT_BATCH):
            rows = min(INSERT_BATCH, count - start)
            cursor.execute(database.insert_sql(rows), (queue,) * rows)
        database.commit(connection)
        return count / (time.perf_counter() - began)


def drain(database: RawDatabase, queue: str, count: int, processes: int, batch_size: int) -> float:
    """Jobs per second claimed in batches with SKIP LOCKED (SQLite: a write-locked
    ``UPDATE … RETURNING``) and marked done, by ``processes`` processes at once."""
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    workers = [
        context.Process(target=_drain_process, args=(database, queue, batch_size, f"raw-{n}", start, results))
        for n in range(processes)
    ]
    for process in workers:
        process.start()
    ready = [results.get(timeout=60) for _ in workers]
    assert all(message == "ready" for message in ready)
    start.set()
    spans = [results.get(timeout=600) for _ in workers]
    for process in workers:
        process.join()
    drained = sum(done for done, _, _ in spans)
    if drained != count:
        raise RuntimeError(f"the raw drain took {drained} jobs, not {count}")
    return float(count / (max(end for _, _, end in spans) - min(begin for _, begin, _ in spans)))


def _drain_process(database: RawDatabase, queue: str, batch_size: int, name: str, start: Any, results: Any) -> None:
    with database.connect() as connection:
        claim, finish = _claim_and_finish(database, connection, queue, batch_size, name)
        results.put("ready")
        start.wait()
        began = time.time()
        done = 0
        while ids := claim():
            finish(ids)
            done += len(ids)
        results.put((done, began, time.time()))


def _claim_and_finish(
    database: RawDatabase, connection: Any, queue: str, batch_size: int, name: str
) -> tuple[Callable[[], list[int]], Callable[[list[int]], None]]:
    t, m, now = database.table, database.mark, database.now
    ready = f"status = 'READY' AND queue = {m} AND run_at <= {now} ORDER BY priority DESC, run_at, id LIMIT {m}"
    claimed = f"status = 'RUNNING', worker = {m}, started_at = {now}, attempts = attempts + 1"
    cursor = connection.cursor()

    def finish(ids: list[int]) -> None:
        database.begin(connection)
        marks = ", ".join([m] * len(ids))
        cursor.execute(f"UPDATE {t} SET status = 'SUCCESSFUL', finished_at = {now} WHERE id IN ({marks})", ids)
        database.commit(connection)

    if database.vendor == "postgresql":

        def claim() -> list[int]:
            cursor.execute(
                f"WITH c AS MATERIALIZED (SELECT id FROM {t} WHERE {ready} FOR UPDATE SKIP LOCKED) "
                f"UPDATE {t} SET {claimed} FROM c WHERE {t}.id = c.id RETURNING {t}.id, {t}.args, {t}.kwargs",
                (queue, batch_size, name),
            )
            rows = cursor.fetchall()
            connection.commit()
            return [row[0] for row in rows]

    elif database.vendor == "mysql":

        def claim() -> list[int]:
            cursor.execute(
                f"SELECT id, args, kwargs FROM {t} WHERE {ready} FOR UPDATE SKIP LOCKED", (queue, batch_size)
            )
            ids = [row[0] for row in cursor.fetchall()]
            if ids:
                marks = ", ".join([m] * len(ids))
                cursor.execute(f"UPDATE {t} SET {claimed} WHERE id IN ({marks})", (name, *ids))
            connection.commit()
            return ids

    else:

        def claim() -> list[int]:
            database.begin(connection)
            cursor.execute(
                f"UPDATE {t} SET {claimed} WHERE id IN (SELECT id FROM {t} WHERE {ready}) RETURNING id, args, kwargs",
                (name, queue, batch_size),
            )
            rows = cursor.fetchall()
            database.commit(connection)
            return [row[0] for row in rows]

    return claim, finish
