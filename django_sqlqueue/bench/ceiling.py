"""The ceilings: the benchmark's work done in raw SQL through the driver, no Django, no
Python per job beyond building the statement; on the jobs table with its columns and
indexes, and on a minimal queue table made for the run (the physical ceiling)."""

from __future__ import annotations

import functools
import multiprocessing
import queue as queue_module
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.db.transient import retried
from django_sqlqueue.runner.spawning import main_module_hidden

INSERT_BATCH = 1000
#: The connection parameters Django adds for its own use of the driver: its adapters and
#: cursor class, and prepared statements turned off, on PostgreSQL; its converters and
#: affected-rows flag on MySQL/MariaDB.
DJANGO_DRIVER_PARAMS = {
    "postgresql": frozenset({"context", "cursor_factory", "prepare_threshold"}),
    "mysql": frozenset({"conv", "client_flag"}),
}


@dataclass(frozen=True)
class QueueTable:
    """A table the raw SQL queues on: what a ready row holds (``{mark}`` for the queue's
    name, ``{now}`` for the database's clock), the order claims take rows in, the
    columns a claim reads back, and what else a claim sets beside status, owner and time."""

    name: str
    columns: str
    row: str
    order: str
    payload: str
    claimed: str = ""


def jobs_table(name: str) -> QueueTable:
    """The app's own jobs table, with every index a claim and a finish keep up to date."""
    return QueueTable(
        name=name,
        columns=(
            "queue, task, args, kwargs, priority, status, run_at, attempts, max_attempts, enqueued_at, worker, errors"
        ),
        row="({mark}, 'sqlqueue.noop', '[]', '{{}}', 0, 'READY', {now}, 0, 1, {now}, '', '[]')",
        order="priority DESC, run_at, id",
        payload="args, kwargs",
        claimed=", attempts = attempts + 1",
    )


#: Per database: the minimal table's key, its payload's type and its time type.
MINIMAL_TYPES = {
    "postgresql": ("BIGSERIAL PRIMARY KEY", "TEXT", "TIMESTAMPTZ"),
    "mysql": ("BIGINT AUTO_INCREMENT PRIMARY KEY", "LONGTEXT", "DATETIME(6)"),
    "sqlite": ("INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT", "DATETIME"),
}


def minimal_columns(vendor: str) -> str:
    key, text, stamp = MINIMAL_TYPES[vendor]
    return (
        f"id {key}, queue VARCHAR(100) NOT NULL, payload {text} NOT NULL, status VARCHAR(10) NOT NULL, "
        f"run_at {stamp} NOT NULL, worker VARCHAR(100) NOT NULL DEFAULT '', started_at {stamp} NULL, "
        f"finished_at {stamp} NULL"
    )


@dataclass(frozen=True)
class RawDatabase:
    """How to reach a queue table with the bare driver; picklable for worker processes."""

    vendor: str
    params: dict[str, Any]
    table: QueueTable
    use_tz: bool

    @classmethod
    def of(cls, connection: BaseDatabaseWrapper, table: QueueTable) -> RawDatabase:
        """How the raw side reaches ``connection``'s database: as the project connects,
        with the parameters Django works out from its settings, ``OPTIONS`` included (a
        MySQL option file, a PostgreSQL service, SSL), less what Django adds for its own
        use of the driver, so the driver's defaults stand."""
        config = connection.settings_dict
        if connection.vendor == "sqlite":
            # The project's own pragmas (journal mode, synchronous), as Django runs them, so
            # that the raw side commits as durably as the app does.
            init = config["OPTIONS"].get("init_command", "")
            params: dict[str, Any] = {
                "database": str(config["NAME"]),
                "init": [part.strip() for part in init.split(";") if part.strip()],
            }
        else:
            django_own = DJANGO_DRIVER_PARAMS[connection.vendor]
            params = {
                name: value for name, value in connection.get_connection_params().items() if name not in django_own
            }
        return cls(connection.vendor, params, table, settings.USE_TZ)

    @contextmanager
    def connect(self) -> Iterator[Any]:
        if self.vendor == "postgresql":
            import psycopg

            connection: Any = psycopg.connect(**self.params)
        elif self.vendor == "mysql":
            import MySQLdb

            connection = MySQLdb.connect(**self.params)
            connection.cursor().execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        else:
            import sqlite3

            connection = sqlite3.connect(self.params["database"], timeout=30, isolation_level=None)
            for statement in self.params.get("init", ()):
                connection.execute(statement)
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

    def insert_sql(self, rows: int) -> str:
        row = self.table.row.format(mark=self.mark, now=self.now)
        return f"INSERT INTO {self.table.name} ({self.table.columns}) VALUES " + ", ".join([row] * rows)

    @contextmanager
    def minimal(self) -> Iterator[RawDatabase]:
        """This database on a minimal queue table made for the run and dropped after it,
        whatever happens meanwhile: the columns a queue needs and one index for the claim
        (partial where the database has them), so no other index slows a claim or a finish."""
        name = f"sqlqueue_bench_minimal_{secrets.token_hex(4)}"
        if self.vendor == "mysql":
            index = f"CREATE INDEX {name}_ready ON {name} (status, queue, run_at, id)"
        else:
            index = f"CREATE INDEX {name}_ready ON {name} (queue, run_at, id) WHERE status = 'READY'"
        self._execute(f"CREATE TABLE {name} ({minimal_columns(self.vendor)})", index)
        try:
            yield replace(
                self,
                table=QueueTable(
                    name=name,
                    columns="queue, payload, status, run_at",
                    row="({mark}, '[]', 'READY', {now})",
                    order="run_at, id",
                    payload="payload",
                ),
            )
        finally:
            self._execute(f"DROP TABLE {name}")

    def _execute(self, *statements: str) -> None:
        with self.connect() as connection:
            cursor = connection.cursor()
            for statement in statements:
                cursor.execute(statement)
            if self.vendor != "sqlite":
                connection.commit()


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
    with main_module_hidden():  # a manage.py without a main guard would run again in each
        for process in workers:
            process.start()
    try:
        _replies(results, workers, timeout=60)
        start.set()
        spans = _replies(results, workers, timeout=600)
    except BaseException:
        for process in workers:
            process.terminate()
        raise
    finally:
        for process in workers:
            process.join()
    drained = sum(done for done, _, _ in spans)
    if drained != count:
        raise RuntimeError(f"the raw drain took {drained} jobs, not {count}")
    return float(count / (max(end for _, _, end in spans) - min(begin for _, begin, _ in spans)))


def _replies(results: Any, workers: list[Any], *, timeout: float) -> list[Any]:
    """One message from each process, or an error as soon as one of them dies (its
    traceback is on stderr) or when ``timeout`` seconds pass: never a silent wait."""
    replies: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(replies) < len(workers):
        try:
            replies.append(results.get(timeout=0.2))
        except queue_module.Empty:
            failed = [process.exitcode for process in workers if process.exitcode]
            if failed:
                raise RuntimeError(f"a raw drain process exited with status {failed[0]}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"the raw drain's processes did not answer within {timeout:.0f} s") from None
    return replies


def _drain_process(database: RawDatabase, queue: str, batch_size: int, name: str, start: Any, results: Any) -> None:
    with database.connect() as connection:
        claim, finish = _claim_and_finish(database, connection, queue, batch_size, name)
        results.put("ready")
        start.wait()
        began = time.time()
        done = 0
        # A deadlock or lock wait timeout is run again, as the app's claims and finishes are
        # (MariaDB's locking claims deadlock now and then): no other error is.
        while ids := retried(claim, Exception, undo=connection.rollback):
            retried(functools.partial(finish, ids), Exception, undo=connection.rollback)
            done += len(ids)
        results.put((done, began, time.time()))


def _claim_and_finish(
    database: RawDatabase, connection: Any, queue: str, batch_size: int, name: str
) -> tuple[Callable[[], list[int]], Callable[[list[int]], None]]:
    table, m, now = database.table, database.mark, database.now
    t, payload = table.name, table.payload
    ready = f"status = 'READY' AND queue = {m} AND run_at <= {now} ORDER BY {table.order} LIMIT {m}"
    claimed = f"status = 'RUNNING', worker = {m}, started_at = {now}{table.claimed}"
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
                f"UPDATE {t} SET {claimed} FROM c WHERE {t}.id = c.id RETURNING {t}.id, {payload}",
                (queue, batch_size, name),
            )
            rows = cursor.fetchall()
            connection.commit()
            return [row[0] for row in rows]

    elif database.vendor == "mysql":

        def claim() -> list[int]:
            cursor.execute(f"SELECT id, {payload} FROM {t} WHERE {ready} FOR UPDATE SKIP LOCKED", (queue, batch_size))
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
                f"UPDATE {t} SET {claimed} WHERE id IN (SELECT id FROM {t} WHERE {ready}) RETURNING id, {payload}",
                (name, queue, batch_size),
            )
            rows = cursor.fetchall()
            database.commit(connection)
            return [row[0] for row in rows]

    return claim, finish
