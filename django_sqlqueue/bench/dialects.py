"""How each database takes the benchmark's raw SQL, in one place: one class per database
(its bare driver, its parameter marker, its transactions, the minimal table's types and
index, its claim, and the designs it can make), chosen once by :func:`dialect_of`.

Everything else in ``bench/`` writes its statements once for all databases and asks
the dialect for what differs. The dialects hold no state, so a ``RawDatabase`` that
holds one crosses into the drain's processes as it is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.db.clock import clock_sql
from django_sqlqueue.db.engines.mysql import CandidateWindow

#: Claims and finishes as the raw drain runs them: claim() takes a batch and returns its
#: ids (none when the queue is empty) and the candidates it lost to another claimer,
#: finish(ids) marks them done.
Claimed = tuple[list[int], int]
Claim = Callable[[], Claimed]
Finish = Callable[[list[int]], None]


@dataclass(frozen=True)
class ClaimStatements:
    """The parts of a raw claim that every database shares: the queue table's name, its
    ready rows in claim order (``ready``: the queue's name and the batch's size as
    parameters), what a claim sets (``claimed``: the worker's name as parameter), what
    it reads back, and the table a claim reads its payload from by id, if another."""

    table: str
    ready: str
    claimed: str
    returned: str
    payload: str
    payload_from: str
    read_then_lock: bool
    mark: str

    def marks(self, ids: list[int]) -> str:
        """One parameter marker for each of ``ids``."""
        return ", ".join([self.mark] * len(ids))

    def read_payloads(self, cursor: Any, ids: list[int]) -> None:
        """Read the payloads of the claimed ``ids`` from the other table, if they live in one."""
        if ids and self.payload_from:
            cursor.execute(f"SELECT id, {self.payload} FROM {self.payload_from} WHERE id IN ({self.marks(ids)})", ids)
            cursor.fetchall()


class Dialect:
    """What the benchmark's raw SQL needs to know of one database."""

    #: The driver's parameter marker.
    mark = "%s"
    #: The connection parameters Django adds for its own use of the driver.
    django_own: frozenset[str] = frozenset()
    #: The minimal table's key, its payload's type and its time type.
    minimal_types: tuple[str, str, str]
    #: Whether the database builds partial indexes (design ``partial`` makes them there).
    has_partial_indexes = True
    #: Whether the database keeps room on a table's pages (design ``fillfactor``).
    has_fillfactor = False
    #: Whether the app's claim reads its candidates before it locks them (design ``read-then-lock``).
    reads_then_locks = False

    def params(self, connection: BaseDatabaseWrapper) -> dict[str, Any]:
        """How the bare driver reaches ``connection``'s database: as the project connects,
        with the parameters Django works out from its settings, ``OPTIONS`` included (a
        MySQL option file, a PostgreSQL service, SSL), less what Django adds for its own
        use of the driver, so the driver's defaults stand."""
        return {
            name: value for name, value in connection.get_connection_params().items() if name not in self.django_own
        }

    def now(self, connection: BaseDatabaseWrapper) -> str:
        """The database's clock as this driver takes it in a statement with parameters."""
        return clock_sql(connection)

    def connect(self, params: dict[str, Any]) -> Any:
        """A connection of the bare driver."""
        raise NotImplementedError

    def begin(self, connection: Any) -> None:
        """Open a transaction where the driver does not open one itself."""

    def commit(self, connection: Any) -> None:
        """Commit what :meth:`begin` (or the driver) opened."""
        connection.commit()

    def commit_statements(self, connection: Any) -> None:
        """Commit statements run outside :meth:`begin`."""
        connection.commit()

    def minimal_ready_index(self, name: str) -> str:
        """The minimal table's one index, for the claim: partial where the database has them."""
        return f"CREATE INDEX {name}_ready ON {name} (queue, run_at, id) WHERE status = 'READY'"

    def claim(self, connection: Any, sql: ClaimStatements, queue: str, batch_size: int, name: str) -> Claim:
        """The raw drain's claim of up to ``batch_size`` ready jobs of ``queue`` for the
        worker ``name`` on ``connection``, each claim committed."""
        raise NotImplementedError

    def narrow_finish(self, wide: str, finished: str) -> tuple[str, ...]:
        """Design ``narrow``'s finish of the jobs ``{ids}``: deleted from the hot table
        ``{t}``, and ``finished`` (an ``UPDATE`` of the ``wide`` table) written over them."""
        return ("DELETE FROM {t} WHERE id IN ({ids})", f"{finished} WHERE id IN ({{ids}})")

    def history_finish(self, into: str) -> tuple[str, ...]:
        """Design ``history``'s finish of the jobs ``{ids}``: copied by ``into`` (an
        ``INSERT … SELECT`` into the history table) from ``{t}``, then deleted from it."""
        return (f"{into} FROM {{t}} WHERE id IN ({{ids}})", "DELETE FROM {t} WHERE id IN ({ids})")

    def unsupported(self, design: str) -> str | None:
        """Why ``design`` cannot be made on this database, or None."""
        if design == "fillfactor" and not self.has_fillfactor:
            return "InnoDB and SQLite have no table fillfactor (innodb_fill_factor is the server's, for index builds)"
        if design == "read-then-lock" and not self.reads_then_locks:
            return "the app reads then locks on MySQL/MariaDB only; elsewhere its claim is one locking statement"
        return None


class PostgreSQL(Dialect):
    """psycopg 3: a claim is one ``UPDATE`` of a locking subquery; a finish that moves
    jobs is one statement."""

    # Django's adapters and cursor class, and prepared statements turned off.
    django_own = frozenset({"context", "cursor_factory", "prepare_threshold"})
    minimal_types = ("BIGSERIAL PRIMARY KEY", "TEXT", "TIMESTAMPTZ")
    has_fillfactor = True

    def connect(self, params: dict[str, Any]) -> Any:
        import psycopg

        return psycopg.connect(**params)

    def claim(self, connection: Any, sql: ClaimStatements, queue: str, batch_size: int, name: str) -> Claim:
        t = sql.table
        cursor = connection.cursor()
        locked = f"c AS MATERIALIZED (SELECT id FROM {t} WHERE {sql.ready} FOR UPDATE SKIP LOCKED)"
        update = f"UPDATE {t} SET {sql.claimed} FROM c WHERE {t}.id = c.id RETURNING {sql.returned}"
        # Another table's payload is read in the same statement.
        statement = (
            f"WITH {locked}, u AS ({update}) SELECT u.id, {sql.payload} FROM u JOIN {sql.payload_from} p ON p.id = u.id"
            if sql.payload_from
            else f"WITH {locked} {update}"
        )

        def claim() -> Claimed:
            cursor.execute(statement, (queue, batch_size, name))
            ids = [row[0] for row in cursor.fetchall()]
            connection.commit()
            return ids, 0

        return claim

    # The designs' finishes that move a job are one statement each here.
    def narrow_finish(self, wide: str, finished: str) -> tuple[str, ...]:
        return (
            f"WITH gone AS (DELETE FROM {{t}} WHERE id IN ({{ids}}) RETURNING id) "
            f"{finished} FROM gone WHERE {wide}.id = gone.id",
        )

    def history_finish(self, into: str) -> tuple[str, ...]:
        return (f"WITH moved AS (DELETE FROM {{t}} WHERE id IN ({{ids}}) RETURNING *) {into} FROM moved",)


class MySQL(Dialect):
    """mysqlclient at READ COMMITTED, as the queue requires: a claim is a locking read,
    then an ``UPDATE`` by id (or, as the app claims, candidates read first and locked by
    id after)."""

    # Django's converters and affected-rows flag.
    django_own = frozenset({"conv", "client_flag"})
    minimal_types = ("BIGINT AUTO_INCREMENT PRIMARY KEY", "LONGTEXT", "DATETIME(6)")
    has_partial_indexes = False
    reads_then_locks = True

    def connect(self, params: dict[str, Any]) -> Any:
        import MySQLdb

        connection = MySQLdb.connect(**params)
        connection.cursor().execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        return connection

    def minimal_ready_index(self, name: str) -> str:
        return f"CREATE INDEX {name}_ready ON {name} (status, queue, run_at, id)"

    def claim(self, connection: Any, sql: ClaimStatements, queue: str, batch_size: int, name: str) -> Claim:
        if sql.read_then_lock:
            return self._read_then_lock(connection, sql, queue, batch_size, name)
        t = sql.table
        cursor = connection.cursor()

        def claim() -> Claimed:
            cursor.execute(
                f"SELECT {sql.returned} FROM {t} WHERE {sql.ready} FOR UPDATE SKIP LOCKED", (queue, batch_size)
            )
            ids = [row[0] for row in cursor.fetchall()]
            sql.read_payloads(cursor, ids)
            if ids:
                cursor.execute(f"UPDATE {t} SET {sql.claimed} WHERE id IN ({sql.marks(ids)})", (name, *ids))
            connection.commit()
            return ids, 0

        return claim

    def _read_then_lock(self, connection: Any, sql: ClaimStatements, queue: str, batch_size: int, name: str) -> Claim:
        """The app's claim: candidates read without locks, then locked by id with ``SKIP
        LOCKED``; it counts the candidates others took first."""
        t, m = sql.table, sql.mark
        cursor = connection.cursor()
        window = CandidateWindow()

        def claim() -> Claimed:
            lost = 0
            while True:
                cursor.execute(f"SELECT id FROM {t} WHERE {sql.ready}", (queue, batch_size * window.per_job))
                candidates = [row[0] for row in cursor.fetchall()]
                if not candidates:
                    connection.commit()
                    return [], lost
                cursor.execute(
                    f"SELECT {sql.returned} FROM {t} WHERE status = 'READY' AND id IN ({sql.marks(candidates)}) "
                    f"ORDER BY id LIMIT {m} FOR UPDATE SKIP LOCKED",
                    (*candidates, batch_size),
                )
                ids = [row[0] for row in cursor.fetchall()]
                lost += window.lost(candidates, ids, batch_size)
                if ids:
                    sql.read_payloads(cursor, ids)
                    cursor.execute(f"UPDATE {t} SET {sql.claimed} WHERE id IN ({sql.marks(ids)})", (name, *ids))
                    connection.commit()
                    return ids, lost
                # Others hold every candidate: read again (a claim of none ends the drain).
                connection.commit()

        return claim


class SQLite(Dialect):
    """sqlite3 in autocommit, transactions opened by hand: a claim is one ``UPDATE …
    RETURNING`` under the write lock, taken up front as the app's claim takes it."""

    mark = "?"
    minimal_types = ("INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT", "DATETIME")

    def params(self, connection: BaseDatabaseWrapper) -> dict[str, Any]:
        # The project's own pragmas (journal mode, synchronous), as Django runs them, so
        # that the raw side commits as durably as the app does.
        config = connection.settings_dict
        init = config["OPTIONS"].get("init_command", "")
        return {"database": str(config["NAME"]), "init": [part.strip() for part in init.split(";") if part.strip()]}

    def now(self, connection: BaseDatabaseWrapper) -> str:
        # sqlite3 takes ? for parameters: a % is itself, not doubled as Django writes it.
        return clock_sql(connection).replace("%%", "%")

    def connect(self, params: dict[str, Any]) -> Any:
        import sqlite3

        connection = sqlite3.connect(params["database"], timeout=30, isolation_level=None)
        for statement in params.get("init", ()):
            connection.execute(statement)
        return connection

    def begin(self, connection: Any) -> None:
        connection.execute("BEGIN IMMEDIATE")

    def commit(self, connection: Any) -> None:
        connection.execute("COMMIT")

    def commit_statements(self, connection: Any) -> None:
        """Nothing to commit: outside :meth:`begin`, each statement commits itself."""

    def claim(self, connection: Any, sql: ClaimStatements, queue: str, batch_size: int, name: str) -> Claim:
        t = sql.table
        cursor = connection.cursor()

        def claim() -> Claimed:
            self.begin(connection)
            cursor.execute(
                f"UPDATE {t} SET {sql.claimed} WHERE id IN (SELECT id FROM {t} WHERE {sql.ready}) "
                f"RETURNING {sql.returned}",
                (name, queue, batch_size),
            )
            ids = [row[0] for row in cursor.fetchall()]
            sql.read_payloads(cursor, ids)
            self.commit(connection)
            return ids, 0

        return claim


#: Each database's dialect, by the name Django gives its backend.
DIALECTS: dict[str, Dialect] = {"postgresql": PostgreSQL(), "mysql": MySQL(), "sqlite": SQLite()}


def dialect_of(connection: BaseDatabaseWrapper) -> Dialect:
    """The dialect of ``connection``'s database: the benchmark's one dispatch on it."""
    return DIALECTS[connection.vendor]
