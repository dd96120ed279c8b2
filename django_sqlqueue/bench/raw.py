"""The benchmark's ceilings in SQL: how the bare driver reaches the database, and each
database's statements for the raw queue (insert, claim with ``SKIP LOCKED`` or SQLite's
write lock, finish) on the jobs table and on a minimal queue table made for the run.

The processes, timing and printing are ``bench/ceiling``'s; what differs between the
databases is their dialect's (``bench/dialects``)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.bench.dialects import Claim, ClaimStatements, Dialect, Finish, dialect_of

#: The raw finish: the jobs ``{ids}`` (their parameters) succeeded at ``{now}``.
FINISH = "UPDATE {t} SET status = 'SUCCESSFUL', finished_at = {now} WHERE id IN ({ids})"


@dataclass(frozen=True)
class QueueTable:
    """A table the raw SQL queues on: what a ready row holds (``{mark}`` for the queue's
    name, ``{now}`` for the database's clock), the order claims take rows in, the
    columns a claim reads back, and what else a claim sets beside status, owner and time.

    A design of the jobs table (``bench/design_tables``) may also name the table a claim reads
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


def minimal_columns(dialect: Dialect) -> str:
    """The minimal queue table's columns in ``dialect``'s types."""
    key, text, stamp = dialect.minimal_types
    return (
        f"id {key}, queue VARCHAR(100) NOT NULL, payload {text} NOT NULL, status VARCHAR(10) NOT NULL, "
        f"run_at {stamp} NOT NULL, worker VARCHAR(100) NOT NULL DEFAULT '', started_at {stamp} NULL, "
        f"finished_at {stamp} NULL"
    )


@dataclass(frozen=True)
class RawDatabase:
    """How to reach a queue table with the bare driver; picklable for worker processes."""

    dialect: Dialect
    params: dict[str, Any]
    table: QueueTable
    #: The database's clock as this driver takes it in a statement with parameters: the
    #: queue's own (:func:`~django_sqlqueue.db.clock.clock_sql`), so raw rows are due when
    #: the app's are, whatever ``USE_TZ`` and the connection's time zone.
    now: str

    @classmethod
    def of(cls, connection: BaseDatabaseWrapper, table: QueueTable) -> RawDatabase:
        """How the raw side reaches ``connection``'s database: as the project connects
        (:meth:`~django_sqlqueue.bench.dialects.Dialect.params`)."""
        dialect = dialect_of(connection)
        return cls(dialect, dialect.params(connection), table, dialect.now(connection))

    @contextmanager
    def connect(self) -> Iterator[Any]:
        """A connection of the bare driver, closed afterwards; on MySQL/MariaDB at READ
        COMMITTED, as the queue requires."""
        connection = self.dialect.connect(self.params)
        try:
            yield connection
        finally:
            connection.close()

    @property
    def mark(self) -> str:
        """The driver's parameter marker."""
        return self.dialect.mark

    def begin(self, connection: Any) -> None:
        """SQLite takes the write lock up front, as the app's claim does."""
        self.dialect.begin(connection)

    def commit(self, connection: Any) -> None:
        """Commit what :meth:`begin` (or the driver, elsewhere) opened."""
        self.dialect.commit(connection)

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
        self.execute(f"CREATE TABLE {name} ({minimal_columns(self.dialect)})", self.dialect.minimal_ready_index(name))
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
            self.dialect.commit_statements(connection)

    def claim_and_finish(self, connection: Any, queue: str, batch_size: int, name: str) -> tuple[Claim, Finish]:
        """The raw drain's claim of up to ``batch_size`` ready jobs of ``queue`` for the
        worker ``name``, and its finish, on ``connection``: a claim locks with ``SKIP
        LOCKED`` (PostgreSQL: one ``UPDATE`` of a locking subquery; MySQL/MariaDB: a
        locking read, then an ``UPDATE`` by id), or on SQLite is one ``UPDATE …
        RETURNING`` under the write lock; each commits. A claim returns the ids it
        took and how many candidates it read that another claimer took first."""
        table, m, now = self.table, self.mark, self.now
        t = table.name
        statements = ClaimStatements(
            table=t,
            ready=f"status = 'READY' AND queue = {m} AND run_at <= {now} ORDER BY {table.order} LIMIT {m}",
            claimed=f"status = 'RUNNING', worker = {m}, started_at = {now}{table.claimed}",
            # What the claim returns: the payload too, unless it is read from another table.
            returned=f"{t}.id" if table.payload_from else f"{t}.id, {table.payload}",
            payload=table.payload,
            payload_from=table.payload_from,
            read_then_lock=table.read_then_lock,
            mark=m,
        )
        cursor = connection.cursor()

        def finish(ids: list[int]) -> None:
            self.begin(connection)
            for statement in table.finish:
                cursor.execute(statement.format(t=t, now=now, ids=statements.marks(ids)), ids)
            self.commit(connection)

        return self.dialect.claim(connection, statements, queue, batch_size, name), finish
