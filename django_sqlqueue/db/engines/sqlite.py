"""SQLite: its errors by their words, the write lock a safe claim needs, and WAL mode."""

from __future__ import annotations

import os
from typing import Any, cast

from django.db.models import QuerySet

from django_sqlqueue.db.engines.base import Engine, ErrorCodes, Model, dotted
from django_sqlqueue.db.engines.claims import ClaimSteps
from django_sqlqueue.db.engines.zones import local_clock

#: ``UPDATE ... RETURNING``, which the claim uses on SQLite, came in 3.35.
SQLITE_MIN_VERSION = (3, 35)

#: How to put a SQLite database in WAL mode, for the check that finds it is not.
JOURNAL_HINT = (
    'Add "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;" to the database\'s '
    "OPTIONS (see Troubleshooting in django-sqlqueue's documentation), or run PRAGMA journal_mode=WAL on the file once."
)


class SQLite(Engine):
    vendor = "sqlite"
    display = "SQLite"
    # Words of SQLite's message (its only detail on Python 3.10).
    codes = ErrorCodes(
        transient=("database is locked", "database table is locked"),
        unavailable=(
            "disk I/O error",
            "unable to open database file",
            "attempt to write a readonly database",
            "disk is full",
        ),
        unwritable=("string or blob too big", "CHECK constraint failed"),
        unmigrated=("no such table", "no such column", "has no column named"),
    )
    claim_hint = "Add 'OPTIONS': {'transaction_mode': 'IMMEDIATE'} to this database in settings.DATABASES."
    driver_hint = "Run on a Python linked with a newer SQLite, or on PostgreSQL or MySQL."

    @classmethod
    def raised(cls, cause: BaseException) -> bool:
        # The last asked (``engines.errors``): what neither other driver raised.
        return True

    @classmethod
    def matches(cls, error: BaseException, cause: BaseException, codes: Any) -> bool:
        return any(words in str(error) for words in codes)

    def claim_problem(self) -> str | None:
        mode = self.options.get("transaction_mode")
        if str(mode).upper() not in {"IMMEDIATE", "EXCLUSIVE"}:
            return (
                f"SQLite database {self.connection.alias!r} opens transactions in DEFERRED mode, so two processes "
                "claiming at once fail with 'database is locked'"
            )
        return None

    def driver_problem(self) -> str | None:
        driver = cast(Any, self.connection).Database
        if driver.sqlite_version_info < SQLITE_MIN_VERSION:
            return (
                f"SQLite database {self.connection.alias!r} runs on SQLite {driver.sqlite_version}, which has no "
                f"UPDATE ... RETURNING; django-sqlqueue needs SQLite {dotted(SQLITE_MIN_VERSION)} or newer"
            )
        return None

    def journal_problem(self) -> str | None:
        """Outside WAL mode, every claim and finish rewrites a rollback journal and
        blocks every reader while it commits: workers drain several times slower, and
        the admin waits on them. The mode is kept in the file, so asking the database
        is what tells."""
        if cast(Any, self.connection).is_in_memory_db():
            return None
        with self.connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            (mode,) = cursor.fetchone()
        if mode.lower() == "wal":
            return None
        return (
            f"SQLite database {self.connection.alias!r} is in journal_mode {mode}, not WAL: "
            "claims and finishes block readers"
        )

    # Claims: one ``UPDATE … RETURNING`` under the write lock, taken in ``BEGIN IMMEDIATE``.

    claim_holds_database = True

    def claim(self, claim: ClaimSteps) -> tuple[list[Any], int]:
        """SQLite has no row locks: the claim is an ``UPDATE … RETURNING`` of the first
        ready keyless ids, in a transaction whose ``BEGIN IMMEDIATE`` takes the
        database's write lock before the statement reads (on its own, the statement
        would read first, and could then fail to take the lock from a writer that
        committed meanwhile, without waiting). While it lasts no other process writes,
        so no candidate is ever lost to another. When it takes fewer than it wanted and
        keyed jobs wait, or once limits are in play, a second transaction reads the
        first candidates, admits those under their limits and claims them by id.

        The statement returns only the ids, and the rows are read after it commits (in
        WAL a read neither waits for a writer nor holds one up): returning every column
        held the write lock longer, and two processes drained less."""
        keyless = claim.keyless(lambda ready: f"IN ({ready} LIMIT %s)")
        rows = claim.retry(lambda: claim.run(*keyless, ids_only=True)) if keyless else []
        if claim.short(rows):
            rows += claim.retry(lambda: claim.run_admitted(claim.limit - len(rows), _as_read, ids_only=True))
        return claim.returned(rows, ids_only=True), 0

    def range_first(self, rows: QuerySet[Model], in_range: QuerySet[Model]) -> QuerySet[Model]:
        """The rows of ``rows`` whose keys the range holds: SQLite's planner would rather
        read a grouping index in full, to group without sorting, than the range of the
        index it filters on, many times slower for an hour of a million finished jobs;
        given the range's keys, it reads the range."""
        return rows.filter(pk__in=in_range.values("pk"))

    # Clock, wake-up, connections and estimates: UTC moved to the connection's zone, no
    # ``NOTIFY`` and no server; keeps no estimates.

    def clock(self) -> str:
        """A wall-clock time in the connection's time zone: ``'now'`` is UTC, moved by
        the zone's offset.

        SQLite compares times as text, and Django writes a datetime with six digits of
        fraction where ``%f`` has three: a job enqueued with the clock read back from
        here (``...:00.123000``) would not be due to the clock of the same millisecond
        (``...:00.123``). Padded, both read the same."""
        # Doubled: the driver's wrapper turns %% into %.
        utc = "STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'now')"
        offset = local_clock(self.connection.timezone_name, utc, "'%s.000'", "'%+d seconds'")
        clock = f"STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'now', {offset})" if offset else utc
        return f"({clock} || '000')"

    def wakeup_identity(self) -> str | None:
        """The file's real path: two settings may name one file. An in-memory database
        is this process's alone: nobody else's enqueue could wake its workers."""
        if cast(Any, self.connection).is_in_memory_db():
            return None
        return self.identity(os.path.realpath(str(self.connection.settings_dict["NAME"])))


def _as_read(ready: QuerySet[Any]) -> QuerySet[Any]:
    """The candidates, read under the claim's write lock, which already holds them."""
    return ready
