"""The kinds of database error the queue tells apart, whichever database raised it:
those worth running a transaction again for, those of a database out of reach, those
of data it cannot store, and those of tables the migrations did not make.

An error is classified by the driver's exception alone (each engine says which it
raised), so code that caught one needs no connection to ask."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import DatabaseError, DataError, InterfaceError

from django_sqlqueue.db.engines.base import Engine
from django_sqlqueue.db.engines.mysql import MySQL
from django_sqlqueue.db.engines.postgresql import PostgreSQL
from django_sqlqueue.db.engines.sqlite import SQLite
from django_sqlqueue.exceptions import TablesNotMigrated

#: Asked in this order which raised an error: SQLite's, told by its words, comes last.
_RAISERS: tuple[type[Engine], ...] = (PostgreSQL, MySQL, SQLite)


def _is(error: BaseException, kind: str) -> bool:
    # Django raises its own exception with the driver's as the cause (but see MySQL's).
    cause = error.__cause__ or error
    engine = next(engine for engine in _RAISERS if engine.raised(cause))
    return engine.matches(error, cause, getattr(engine.codes, kind))


def is_transient(error: BaseException) -> bool:
    """Whether a failed statement may succeed if its whole transaction is run again."""
    return _is(error, "transient")


def is_unavailable(error: BaseException) -> bool:
    """Whether the database is out of reach or cannot write for now: wait and try again.

    A transient error is one that :func:`~django_sqlqueue.db.transient.retry_transient`
    gave up on. An error that is neither this nor :func:`is_unwritable` (a missing
    table or column, a syntax error) is a bug or a misconfiguration: it should stop a
    worker loudly rather than loop."""
    if isinstance(error, InterfaceError) or any(engine.lost_connection(error) for engine in _RAISERS):
        return True
    return _is(error, "unavailable") or _is(error, "transient")


def is_unwritable(error: BaseException) -> bool:
    """Whether the database refused the data a statement carried: no retry can write it."""
    return isinstance(error, DataError) or _is(error, "unwritable")


@contextlib.contextmanager
def migrations_needed(using: str) -> Iterator[None]:
    """Say to run ``migrate`` when a statement inside finds a table or a column of the
    queue's missing from ``using``'s database, rather than let the driver's "no such
    table" (or "relation does not exist", or "Table doesn't exist") out alone."""
    try:
        yield
    except DatabaseError as error:
        if (missing := tables_missing(error, using)) is None:
            raise
        raise missing from error


def tables_missing(error: DatabaseError, using: str) -> TablesNotMigrated | None:
    """What :func:`migrations_needed` raises for ``error``, raised on ``using``'s
    database, or None when it is no missing table or column (for a caller that cannot
    spare a context manager on its path)."""
    if not _is(error, "unmigrated"):
        return None
    return TablesNotMigrated(
        f"The queue's tables are missing from the database {using!r}, or older than its migrations "
        f"({_said(error)}): run manage.py migrate."
    )


def _said(error: BaseException) -> str:
    """The database's message alone: without MySQL's error number, and without the
    lines psycopg adds that quote the statement."""
    cause = error.__cause__ or error
    engine = next(engine for engine in _RAISERS if engine.raised(cause))
    return engine.said(error, cause)
