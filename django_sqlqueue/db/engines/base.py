"""What a database engine is: everything the queue does differently on one database,
behind one interface, made once per connection (:func:`~django_sqlqueue.db.engines.engine`).

The rest of ``db/`` holds the job and feature statements, the same on every database;
where they differ they ask the connection's engine. An engine also keeps what its
connection compiled once and reuses on every claim and enqueue (:meth:`Engine.made`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Q, QuerySet

from django_sqlqueue.db.engines.claims import ClaimSteps

Made = TypeVar("Made")
#: The model something is made for: the jobs table's for most, any of the queue's tables'.
Model = TypeVar("Model", bound=models.Model)


class ErrorCodes(NamedTuple):
    """How one database names the errors of each kind the queue tells apart."""

    #: Deadlocks and lock waits that gave up: the whole transaction may succeed if run again.
    transient: Any
    #: The connection is gone, or the server cannot write for now (restart, killed
    #: connection, shutdown, failover, full disk): wait, reconnect and try again.
    unavailable: Any
    #: This data cannot be written, however often it is tried: too large, out of range,
    #: invalid JSON or text. Only the statement that carried it fails.
    unwritable: Any
    #: A table or a column a statement names is not in the database: the migrations
    #: that make them were not applied to it.
    unmigrated: Any


class KeyIndex(Protocol):
    """What an engine reads of the unique index on the jobs' keys (``db/schema``'s
    ``ActiveKeyConstraint`` is one), given by the caller, so that the engines import
    no schema module and stay below it."""

    @property
    def mysql_column(self) -> str:
        """MySQL/MariaDB: the hidden generated column the unique index is on."""
        ...

    def holding(self) -> Q:
        """The jobs that hold their key."""
        ...


class CopyRequest(NamedTuple):
    """Many new jobs to write by one ``COPY`` (:meth:`Engine.copy_jobs`)."""

    #: The jobs, built and checked, none with a ``unique_key`` (``COPY`` has no ``ON CONFLICT``).
    jobs: Sequence[Any]
    #: The jobs' table, its name quoted.
    table: str
    #: The database's clock, as SQL.
    now_sql: str
    #: The columns whose values ``rows`` hold, a row a job, in the jobs' order.
    columns: Sequence[str]
    rows: Iterable[Sequence[Any]]
    #: A job's time made a value once the database's now is read: ``time_at(time, now)``
    #: (``db/clock.time_at``).
    time_at: Callable[[Any, Any], Any]


class MarkedInsert(NamedTuple):
    """An ``INSERT`` of new jobs that tells its rows by a token it writes with them
    (:meth:`Engine.insert_marked`)."""

    #: The statement, every row of which holds ``token`` in ``insert_token``.
    sql: str
    params: Sequence[Any] | None
    #: The jobs' table, its name quoted.
    table: str
    #: The columns to read back, quoted and joined.
    columns: str
    token: str
    #: Each row's unique key, or None.
    keys: Sequence[str | None]
    #: The unique index on the keys, through which a row's holder is found.
    key_index: KeyIndex


class ServerConnections(NamedTuple):
    """What a database server says of its connections (:meth:`Engine.server_connections`)."""

    #: How many it lets this user open: its limit, less the slots it keeps for others.
    limit: int
    #: How many client connections are open now, this one among them.
    in_use: int

    @property
    def free(self) -> int:
        return max(0, self.limit - self.in_use)


class Engine:
    """One database's ways, for one connection (subclasses: one per database)."""

    #: Django's ``connection.vendor`` of the databases this engine runs on.
    vendor: ClassVar[str]
    #: The database's name in messages to people.
    display: ClassVar[str]
    #: This database's codes for each kind of error (see :meth:`raised` and :meth:`matches`).
    codes: ClassVar[ErrorCodes]
    #: How to fix what :meth:`claim_problem` finds, where it can find something.
    claim_hint: ClassVar[str | None] = None
    #: How to fix what :meth:`driver_problem` finds, where it can find something.
    driver_hint: ClassVar[str | None] = None

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        self.connection = connection
        self._made: dict[tuple[Callable[..., Any], type[models.Model]], Any] = {}

    def made(self, make: Callable[[type[Model], BaseDatabaseWrapper], Made], model: type[Model]) -> Made:
        """``make(model, connection)``, made on first use and kept while the connection lives.

        Django gives each thread its own connection object for its whole life and
        reconnects inside it, so what its backend compiled (column lists, converters,
        statements) stays true for as long as the object does. Kept on the connection's
        engine, what is made goes with the connection: a dict of a module's would keep
        every thread's connection alive after its thread ended (a web server's, say)."""
        key = (make, model)
        if (value := self._made.get(key)) is None:
            value = self._made[key] = make(model, self.connection)
        return value

    def forget(self, make: Callable[..., Any]) -> None:
        """Let go of what ``make`` made for this connection: it is made afresh on next use
        (a test that starts as a new worker would, say)."""
        for key in [key for key in self._made if key[0] is make]:
            del self._made[key]

    # Errors, told apart by the driver's exception, which needs no connection: the class
    # answers (``engines.errors`` asks each database's in turn).

    @classmethod
    def raised(cls, cause: BaseException) -> bool:
        """Whether this database's driver raised ``cause`` (Django's error's ``__cause__``)."""
        raise NotImplementedError

    @classmethod
    def matches(cls, error: BaseException, cause: BaseException, codes: Any) -> bool:
        """Whether ``error`` (its driver's ``cause``, which :meth:`raised`) is one of ``codes``."""
        raise NotImplementedError

    @classmethod
    def lost_connection(cls, error: BaseException) -> bool:
        """Whether ``error`` is the driver's own report of a lost connection, which
        carries no code of the database's."""
        return False

    @classmethod
    def said(cls, error: BaseException, cause: BaseException) -> str:
        """The database's message alone, without what the driver adds around it."""
        return str(error).strip().split("\n")[0]

    # What makes the queue unsafe or slow on this database, for the system checks and
    # for the claim, which refuses to run into a problem.

    def claim_problem(self) -> str | None:
        """Why claiming on this connection's database would be unsafe, or None.

        Needs only the settings, never a query, so it is cheap to ask before every claim."""
        return None

    def version_problem(self) -> str | None:
        """Why this database server cannot run the queue, or None; may ask the server."""
        return None

    def driver_problem(self) -> str | None:
        """Why the driver this connection uses cannot run the queue, or None.

        Asks the driver module, never the server, so it is cheap enough for every command."""
        return None

    def journal_problem(self) -> str | None:
        """Why this database's journal makes a slow queue, or None; may ask the database."""
        return None

    def vacuum_problem(self, table: str) -> str | None:
        """Why nothing cleans the dead rows of the jobs ``table`` up, or None; may ask the database."""
        return None

    @property
    def options(self) -> dict[str, Any]:
        """The connection's ``OPTIONS`` setting."""
        return self.connection.settings_dict.get("OPTIONS") or {}

    @property
    def label(self) -> str:
        """The database as the ``runworkers`` banner names it: its vendor and name."""
        return f"{self.vendor} {self.connection.settings_dict['NAME']}"

    # Claims: how this database takes a batch of ready jobs, and reads what decides it.

    #: Whether a claim holds the write lock of the whole database (SQLite's), so that
    #: nothing it reads can change under it: it then locks no row of its own.
    claim_holds_database: ClassVar[bool] = False

    def claim(self, claim: ClaimSteps) -> tuple[list[Any], int]:
        """The jobs ``claim`` takes, in claim order, and how many of its candidates
        another worker locked first (see ``db/claiming``'s ``ClaimedJobs``)."""
        raise NotImplementedError

    def latest(self, rows: QuerySet[Model]) -> QuerySet[Model]:
        """``rows`` read as the latest committed rows inside the claim's transaction,
        whatever snapshot its first read took."""
        return rows

    def holding(self, jobs: QuerySet[Model], index: KeyIndex, keys: list[str]) -> QuerySet[Model]:
        """The ``jobs`` holding ``keys`` in the unique ``index``, read through it."""
        return jobs.filter(index.holding(), unique_key__in=keys)

    def range_first(self, rows: QuerySet[Model], in_range: QuerySet[Model]) -> QuerySet[Model]:
        """``in_range`` (``rows`` filtered on a range of an indexed column), to be
        grouped, written so that the planner reads the range's index."""
        return in_range

    def finished_first(self, rows: QuerySet[Model], finished: Q) -> QuerySet[Model]:
        """``rows``, to be grouped by columns of an admin index (``FinishedIndex``) for
        counts of the ``finished`` jobs among them, written so that the planner reads
        that index; the caller keeps the finished rows of the result."""
        return rows

    # Clock, wake-up, connections and estimates: the database's now, how an idle worker
    # hears of new jobs, what the server's connection limit leaves, and what the
    # database estimates of a table.

    #: Whether the database delivers notifications to the workers that listen (``NOTIFY``,
    #: :meth:`notify`); elsewhere an idle worker polls, and wakes to a datagram from an
    #: enqueue committed on its host (``db/wakeup.py``).
    notifies: ClassVar[bool] = False
    #: Whether the database estimates each common value's share of a column
    #: (:meth:`value_shares`); elsewhere a caller samples instead.
    keeps_value_shares: ClassVar[bool] = False
    #: The statement that reads the database's estimate of a table's rows, given the
    #: table's :meth:`catalog_name`; None where it keeps none.
    ROWS_SQL: ClassVar[str | None] = None

    def clock(self) -> str:
        """The database's now as SQL that takes no parameters, read the way Django
        stores datetimes on this database (``db/clock.DatabaseNow``), ``%`` doubled as
        Django passes SQL to the driver."""
        raise NotImplementedError

    @property
    def server(self) -> str:
        """The database as the benchmark's figures name it: its vendor and its server's
        kind (MariaDB or MySQL, say)."""
        return f"{self.vendor} {self.connection.display_name}"

    def notify(self, payload: str) -> None:
        """Send ``payload`` to the listening workers when the current transaction
        commits (at once in autocommit); nothing where the database has no ``NOTIFY``."""

    def listening_connection(self, *, finishes: bool = False) -> BaseDatabaseWrapper:
        """A connection of its own to this database, listening for what :meth:`notify`
        sends (with ``finishes``, what :meth:`notify_finished` sends); only where
        :attr:`notifies`. The caller closes it."""
        raise NotImplementedError(f"{self.display} delivers no notifications: its workers poll")

    def announcing_update(self, update: str, pk: str, status: str, finished: Sequence[str]) -> str | None:
        """The statement ``update`` (an ``UPDATE`` of jobs; ``pk`` and ``status`` their
        quoted columns) made to also tell the waiters which of the jobs it wrote reached
        a status of ``finished`` (as :meth:`notify_finished` does), in the same statement
        and transaction, its row count unchanged; None where the database has no ``NOTIFY``."""
        return None

    def notify_finished(self, payloads: list[str]) -> None:
        """Send ``payloads`` (finished jobs' ids, ``db/finished.py``) to the waiters that
        listen, when the current transaction commits (at once in autocommit), in one
        statement; nothing where the database has no ``NOTIFY``."""

    def wakeup_identity(self) -> str | None:
        """What tells this database from every other that workers on this host wait on,
        for the folder of its wake-up sockets (``db/wakeup.py``); None where no other
        process can reach it."""
        return self.identity(str(self.connection.settings_dict["NAME"]))

    def identity(self, name: str) -> str:
        """The database ``name`` on this connection's server, as :meth:`wakeup_identity` says it."""
        settings = self.connection.settings_dict
        return "\0".join((self.vendor, str(settings["HOST"]), str(settings["PORT"]), name))

    def worker_connections(self, threads: int) -> int:
        """The most connections to this database one worker process of ``threads``
        threads opens: its claims and finishes, its heartbeat, one per thread for the
        tasks, and where the database :attr:`notifies`, the one that listens."""
        return 2 + threads + self.notifies

    def server_connections(self) -> ServerConnections | None:
        """The server's connection limit and how much of it is used, or None where
        there is no server to ask."""
        return None

    def estimated_rows(self, table: str) -> int:
        """The database's own estimate of the rows in ``table``, without reading them,
        or -1 where it has none (:attr:`ROWS_SQL` is None, or the table was never analysed)."""
        if self.ROWS_SQL is None:
            return -1
        with self.connection.cursor() as cursor:
            cursor.execute(self.ROWS_SQL, [self.catalog_name(table)])
            row = cursor.fetchone()
        return -1 if row is None or row[0] is None else max(int(row[0]), -1)

    def catalog_name(self, table: str) -> str:
        """``table`` as the database's catalog of its tables looks it up: by its plain name."""
        return table

    def value_shares(self, table: str, columns: list[str]) -> dict[str, dict[str, float]]:
        """Per column of ``columns`` of ``table``, its common values and the share of
        the table each holds, as the database's statistics last found them; a column
        without statistics is left out (every one where not :attr:`keeps_value_shares`)."""
        return {}

    # Inserts: how new jobs' rows travel, what comes back, and what text and size the database takes.

    #: Whether many new jobs go by ``COPY`` (:meth:`copy_jobs`, :meth:`copy_rows`)
    #: rather than by multi-row ``INSERT`` statements.
    copies: ClassVar[bool] = False
    #: Whether many new jobs with unique keys go as one array a column
    #: (``SELECT ... FROM UNNEST(...)``) rather than as ``VALUES`` rows.
    unnests: ClassVar[bool] = False
    #: What an ``INSERT`` of jobs with unique keys ends with, so that a job whose key an
    #: active job holds is not written rather than failing the statement.
    skip_conflicts: ClassVar[str] = " ON CONFLICT DO NOTHING"

    @property
    def returns_rows(self) -> bool:
        """Whether a multi-row ``INSERT ... RETURNING`` gives back every row it wrote."""
        return bool(self.connection.features.can_return_rows_from_bulk_insert)

    def marks_new_rows(self, keyed: bool, identified: bool) -> bool:
        """Whether the rows an ``INSERT`` writes are learnt by a token written with them
        (the ``insert_token`` column, one per insert) and :meth:`insert_marked`,
        rather than by its ``RETURNING``: where the database cannot tell which rows an
        ``INSERT`` of jobs with unique keys (``keyed``) wrote, or the ids of many rows
        whose jobs need them (``identified``: tags, dependencies)."""
        return False

    def insert_marked(self, cursor: Any, insert: MarkedInsert) -> list[Sequence[Any]]:
        """Run ``insert`` (where :meth:`marks_new_rows`) and return the rows it wrote as
        its ``columns``, in the order it wrote them; none of a job it skipped because an
        active job held its key."""
        raise NotImplementedError

    @property
    def most_params(self) -> int | None:
        """The most parameters one statement may bind, or None for no limit."""
        return self.connection.features.max_query_params

    def most_statement_bytes(self) -> int | None:
        """The most bytes of values one statement may carry; None where the database
        sets no such limit (it binds parameters apart from the statement)."""
        return None

    def too_large(self, sql: str, params: Sequence[Any]) -> bool:
        """Whether ``sql`` with ``params`` is larger than the server takes, which it
        answers by ending the connection; False where no statement's size does that."""
        return False

    def literal_rows(
        self, rows: Sequence[tuple[Sequence[Any], Sequence[tuple[str, Sequence[Any]]]]], constants: str
    ) -> list[str] | None:
        """Each of ``rows`` (bound values, then SQL with parameters) as the SQL text
        ``(…)`` of a ``VALUES`` row, its values written in, where the driver would make
        that text anyway; None where the values are bound apart from the statement."""
        return None

    def statement_starts(
        self, texts: Sequence[str], rows_per_statement: int, most_bytes: int, tasks: Sequence[str]
    ) -> list[int]:
        """Where statements of rows written as ``texts`` (:meth:`literal_rows`, of jobs
        of ``tasks``) start, to fit :meth:`most_statement_bytes`."""
        raise NotImplementedError

    def copy_jobs(self, request: CopyRequest) -> list[dict[str, Any]]:
        """Write ``request``'s jobs by ``COPY`` (where :attr:`copies`): what each row holds of its id and times."""
        raise NotImplementedError

    def copy_rows(
        self, table: str, columns: Sequence[str], rows: Iterable[tuple[Any, ...]], times: dict[str, Any]
    ) -> int:
        """Write plain ``rows`` by ``COPY``, each with the same ``times``; how many (where :attr:`copies`)."""
        raise NotImplementedError

    def ids_in(self, column: str, ids: list[int]) -> tuple[str, tuple[Any, ...]]:
        """``column IN (ids)`` and its parameters, one a row. Raises ``EmptyResultSet``
        for no ids."""
        if not ids:
            raise EmptyResultSet
        return f"{column} IN ({', '.join(['%s'] * len(ids))})", tuple(ids)

    def readable(self, field: str) -> Any:
        """An expression reading the time ``field`` as Python can hold it: the plain
        column, where the database holds no time past Python's last."""
        return F(field)

    def text_problem(self, model: type[models.Model], texts: Mapping[str, str | None]) -> str | None:
        """Why this database would not store one of ``texts`` (a column of ``model``'s
        table to the text written to it) as itself, or None."""
        return None

    def tables_charset_problem(self, tables: Sequence[str]) -> str | None:
        """Why the queue's ``tables`` cannot store every name and key, or None; may ask the database."""
        return None

    def connection_charset_problem(self) -> str | None:
        """Why this connection cannot carry every name and key, or None; may ask the database."""
        return None

    def strict_mode_problem(self) -> str | None:
        """Why this connection would change text it cannot store rather than refuse it, or None."""
        return None


def numbers(version: str) -> tuple[int, ...]:
    """The major and minor numbers of a version string: ``"3.2.1"`` is ``(3, 2)``."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))
