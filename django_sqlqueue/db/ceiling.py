"""The benchmark's ceilings in SQL: how the bare driver reaches the database, and each
database's statements for the raw queue (insert, claim with ``SKIP LOCKED`` or SQLite's
write lock, finish) on the jobs table and on a minimal queue table made for the run.

The processes, timing and printing are ``bench/ceiling``'s; every vendor branch they
need is here, as everywhere in ``db/``."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.db.clock import clock_sql
from django_sqlqueue.db.engines.mysql import CandidateWindow

#: The connection parameters Django adds for its own use of the driver: its adapters and
#: cursor class, and prepared statements turned off, on PostgreSQL; its converters and
#: affected-rows flag on MySQL/MariaDB.
DJANGO_DRIVER_PARAMS = {
    "postgresql": frozenset({"context", "cursor_factory", "prepare_threshold"}),
    "mysql": frozenset({"conv", "client_flag"}),
}


#: The raw finish: the jobs ``{ids}`` (their parameters) succeeded at ``{now}``.
FINISH = "UPDATE {t} SET status = 'SUCCESSFUL', finished_at = {now} WHERE id IN ({ids})"


@dataclass(frozen=True)
class QueueTable:
    """A table the raw SQL queues on: what a ready row holds (``{mark}`` for the queue's
    name, ``{now}`` for the database's clock), the order claims take rows in, the
    columns a claim reads back, and what else a claim sets beside status, owner and time.

    A design of the jobs table (``db/designs``) may also name the table a claim reads
    its payload from by id (``payload_from``), a statement that follows each ``INSERT``
    with the queue's name (``filled``: rows of another table for the new ones), the
    statements of a finish (``finish``: ``{t}``, ``{now}`` and ``{ids}`` for the ids'
    marks), and on MySQL/MariaDB a claim that reads its candidates before it locks
    them, as the app's claim does (``read_then_lock``)."""

    name: str
    columns: str
    row: str
    order: str
    payload: str
    claimed: str = ""
    payload_from: str = ""
    filled: str = ""
    finish: tuple[str, ...] = (FINISH,)
    read_then_lock: bool = False


def jobs_table(name: str, *, succeeded: bool = False) -> QueueTable:
    """The app's own jobs table, with every index a claim and a finish keep up to date;
    with ``succeeded``, its rows are written as jobs that succeeded when written (the
    benchmark's finished backlog: written so, not updated after, which would leave the
    database a million row versions to clean up while the drain it is beside runs)."""
    status, finished_at = ("'SUCCESSFUL'", ", {now}") if succeeded else ("'READY'", "")
    values = "{mark}, 'sqlqueue.noop', '[]', '{{}}', 0, " + status + ", {now}, 0, 1, {now}, '', '[]'" + finished_at
    return QueueTable(
        name=name,
        columns=(
            "queue, task, args, kwargs, priority, status, run_at, attempts, max_attempts, enqueued_at, worker, errors"
            + (", finished_at" if succeeded else "")
        ),
        row=f"({values})",
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
    """The minimal queue table's columns on ``vendor``'s database."""
    key, text, stamp = MINIMAL_TYPES[vendor]
    return (
        f"id {key}, queue VARCHAR(100) NOT NULL, payload {text} NOT NULL, status VARCHAR(10) NOT NULL, "
        f"run_at {stamp} NOT NULL, worker VARCHAR(100) NOT NULL DEFAULT '', started_at {stamp} NULL, "
        f"finished_at {stamp} NULL"
    )


def minimal_ready_index(vendor: str, name: str) -> str:
    """The minimal table's one index, for the claim: partial where the database has them."""
    if vendor == "mysql":
        return f"CREATE INDEX {name}_ready ON {name} (status, queue, run_at, id)"
    return f"CREATE INDEX {name}_ready ON {name} (queue, run_at, id) WHERE status = 'READY'"


#: Claims and finishes as the raw drain runs them: claim() takes a batch and returns its
#: ids (none when the queue is empty) and the candidates it lost to another claimer,
#: finish(ids) marks them done.
Claimed = tuple[list[int], int]
Claim = Callable[[], Claimed]
Finish = Callable[[list[int]], None]


@dataclass(frozen=True)
class RawDatabase:
    """How to reach a queue table with the bare driver; picklable for worker processes."""

    vendor: str
    params: dict[str, Any]
    table: QueueTable
    #: The database's clock as this driver takes it in a statement with parameters: the
    #: queue's own (:func:`~django_sqlqueue.db.clock.clock_sql`), so raw rows are due when
    #: the app's are, whatever ``USE_TZ`` and the connection's time zone.
    now: str

    @classmethod
    def of(cls, connection: BaseDatabaseWrapper, table: QueueTable) -> RawDatabase:
        """How the raw side reaches ``connection``'s database: as the project connects,
        with the parameters Django works out from its settings, ``OPTIONS`` included (a
        MySQL option file, a PostgreSQL service, SSL), less what Django adds for its own
        use of the driver, so the driver's defaults stand."""
        config = connection.settings_dict
        now = clock_sql(connection)
        if connection.vendor == "sqlite":
            # The project's own pragmas (journal mode, synchronous), as Django runs them, so
            # that the raw side commits as durably as the app does.
            init = config["OPTIONS"].get("init_command", "")
            params: dict[str, Any] = {
                "database": str(config["NAME"]),
                "init": [part.strip() for part in init.split(";") if part.strip()],
            }
            # sqlite3 takes ? for parameters: a % is itself, not doubled as Django writes it.
            now = now.replace("%%", "%")
        else:
            django_own = DJANGO_DRIVER_PARAMS[connection.vendor]
            params = {
                name: value for name, value in connection.get_connection_params().items() if name not in django_own
            }
        return cls(connection.vendor, params, table, now)

    @contextmanager
    def connect(self) -> Iterator[Any]:
        """A connection of the bare driver, closed afterwards; on MySQL/MariaDB at READ
        COMMITTED, as the queue requires."""
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
        """The driver's parameter marker."""
        return "?" if self.vendor == "sqlite" else "%s"

    def begin(self, connection: Any) -> None:
        """SQLite takes the write lock up front, as the app's claim does."""
        if self.vendor == "sqlite":
            connection.execute("BEGIN IMMEDIATE")

    def commit(self, connection: Any) -> None:
        """Commit what :meth:`begin` (or the driver, elsewhere) opened."""
        if self.vendor == "sqlite":
            connection.execute("COMMIT")
        else:
            connection.commit()

    def insert_sql(self, rows: int) -> str:
        """An ``INSERT`` of ``rows`` ready rows, each with the queue's name as its parameter."""
        row = self.table.row.format(mark=self.mark, now=self.now)
        return f"INSERT INTO {self.table.name} ({self.table.columns}) VALUES " + ", ".join([row] * rows)

    def insert(self, cursor: Any, queue: str, rows: int) -> None:
        """Insert ``rows`` ready jobs of ``queue`` with ``cursor``, and what the table's
        design fills beside them."""
        cursor.execute(self.insert_sql(rows), (queue,) * rows)
        if self.table.filled:
            cursor.execute(self.table.filled.format(mark=self.mark, now=self.now), (queue,))

    @contextmanager
    def minimal(self) -> Iterator[RawDatabase]:
        """This database on a minimal queue table made for the run and dropped after it,
        whatever happens meanwhile: the columns a queue needs and one index for the claim
        (partial where the database has them), so no other index slows a claim or a finish."""
        name = f"sqlqueue_bench_minimal_{secrets.token_hex(4)}"
        self.execute(f"CREATE TABLE {name} ({minimal_columns(self.vendor)})", minimal_ready_index(self.vendor, name))
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
            self.execute(f"DROP TABLE {name}")

    def execute(self, *statements: str) -> None:
        """Run ``statements`` (without parameters) on a connection of their own, committed."""
        with self.connect() as connection:
            cursor = connection.cursor()
            for statement in statements:
                cursor.execute(statement)
            if self.vendor != "sqlite":
                connection.commit()

    def claim_and_finish(self, connection: Any, queue: str, batch_size: int, name: str) -> tuple[Claim, Finish]:
        """The raw drain's claim of up to ``batch_size`` ready jobs of ``queue`` for the
        worker ``name``, and its finish, on ``connection``: a claim locks with ``SKIP
        LOCKED`` (PostgreSQL: one ``UPDATE`` of a locking subquery; MySQL/MariaDB: a
        locking read, then an ``UPDATE`` by id), or on SQLite is one ``UPDATE …
        RETURNING`` under the write lock; each commits. A claim returns the ids it
        took and how many candidates it read that another claimer took first."""
        table, m, now = self.table, self.mark, self.now
        t = table.name
        ready = f"status = 'READY' AND queue = {m} AND run_at <= {now} ORDER BY {table.order} LIMIT {m}"
        claimed = f"status = 'RUNNING', worker = {m}, started_at = {now}{table.claimed}"
        # What the claim returns: the payload too, unless it is read from another table.
        returned = f"{t}.id" if table.payload_from else f"{t}.id, {table.payload}"
        cursor = connection.cursor()

        def marks(ids: list[int]) -> str:
            return ", ".join([m] * len(ids))

        def payloads(ids: list[int]) -> None:
            if ids and table.payload_from:
                cursor.execute(f"SELECT id, {table.payload} FROM {table.payload_from} WHERE id IN ({marks(ids)})", ids)
                cursor.fetchall()

        def finish(ids: list[int]) -> None:
            self.begin(connection)
            for statement in table.finish:
                cursor.execute(statement.format(t=t, now=now, ids=marks(ids)), ids)
            self.commit(connection)

        if self.vendor == "postgresql":
            locked = f"c AS MATERIALIZED (SELECT id FROM {t} WHERE {ready} FOR UPDATE SKIP LOCKED)"
            update = f"UPDATE {t} SET {claimed} FROM c WHERE {t}.id = c.id RETURNING {returned}"
            # Another table's payload is read in the same statement.
            statement = (
                f"WITH {locked}, u AS ({update}) "
                f"SELECT u.id, {table.payload} FROM u JOIN {table.payload_from} p ON p.id = u.id"
                if table.payload_from
                else f"WITH {locked} {update}"
            )

            def claim() -> Claimed:
                cursor.execute(statement, (queue, batch_size, name))
                ids = [row[0] for row in cursor.fetchall()]
                connection.commit()
                return ids, 0

        elif self.vendor == "mysql" and table.read_then_lock:
            window = CandidateWindow()

            def claim() -> Claimed:
                lost = 0
                while True:
                    cursor.execute(f"SELECT id FROM {t} WHERE {ready}", (queue, batch_size * window.per_job))
                    candidates = [row[0] for row in cursor.fetchall()]
                    if not candidates:
                        connection.commit()
                        return [], lost
                    cursor.execute(
                        f"SELECT {returned} FROM {t} WHERE status = 'READY' AND id IN ({marks(candidates)}) "
                        f"ORDER BY id LIMIT {m} FOR UPDATE SKIP LOCKED",
                        (*candidates, batch_size),
                    )
                    ids = [row[0] for row in cursor.fetchall()]
                    lost += window.lost(candidates, ids, batch_size)
                    if ids:
                        payloads(ids)
                        cursor.execute(f"UPDATE {t} SET {claimed} WHERE id IN ({marks(ids)})", (name, *ids))
                        connection.commit()
                        return ids, lost
                    # Others hold every candidate: read again (a claim of none ends the drain).
                    connection.commit()

        elif self.vendor == "mysql":

            def claim() -> Claimed:
                cursor.execute(f"SELECT {returned} FROM {t} WHERE {ready} FOR UPDATE SKIP LOCKED", (queue, batch_size))
                ids = [row[0] for row in cursor.fetchall()]
                payloads(ids)
                if ids:
                    cursor.execute(f"UPDATE {t} SET {claimed} WHERE id IN ({marks(ids)})", (name, *ids))
                connection.commit()
                return ids, 0

        else:

            def claim() -> Claimed:
                self.begin(connection)
                cursor.execute(
                    f"UPDATE {t} SET {claimed} WHERE id IN (SELECT id FROM {t} WHERE {ready}) RETURNING {returned}",
                    (name, queue, batch_size),
                )
                ids = [row[0] for row in cursor.fetchall()]
                payloads(ids)
                self.commit(connection)
                return ids, 0

        return claim, finish
