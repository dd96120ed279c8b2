"""PostgreSQL: many built jobs by ``COPY``, ids and all, for ``enqueue_many``.

A multi-row ``INSERT`` (or ``UNNEST``'s arrays) costs the server a parse, a plan and
an expression per value of every row, and the client a ``RETURNING`` row to read
and convert per job; ``COPY`` costs neither. What ``RETURNING`` gave is known before
the rows go: the ids are taken from the table's sequence first (one statement for the
lot), and the database's now is read in the same statement, so each job's times
(now, a time it was given, now plus a delay) are values like any other. Jobs come
back as saved as a ``RETURNING`` would have left them. ``COPY`` runs in the caller's
transaction, binds nothing (so server-side binding changes nothing) and works behind
pgbouncer's transaction pooling."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from django.db.models.expressions import DatabaseDefault

from django_sqlqueue.rules.lifecycle import ENQUEUE

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from psycopg import Copy

    from django_sqlqueue.db.engines.base import CopyRequest


#: The columns every new job starts with the same value in, and those values as ``COPY`` takes them.
_SAME_FOR_ALL = {"status": ENQUEUE.status.value, "attempts": 0, "worker": "", "errors": "[]"}


def copy_jobs(connection: BaseDatabaseWrapper, request: CopyRequest) -> list[dict[str, Any]]:
    """Write ``request``'s jobs by one ``COPY`` (none has a ``unique_key``: ``COPY`` has
    no ``ON CONFLICT``), the database's now read first: what each job's row holds of its
    id, ``enqueued_at``, ``run_at`` and ``expires_at``, in order, for the caller to set
    on the job."""
    jobs, table, now_sql, columns, rows, time_at = request
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ARRAY(SELECT nextval(pg_get_serial_sequence(%s::text, 'id')) "
            f"FROM generate_series(1, %s::int)), {now_sql}",
            [table, len(jobs)],
        )
        ids, now = cursor.fetchone()
    same = tuple(_SAME_FOR_ALL.values())
    # Every row's enqueued_at, and most rows' run_at: written as text once, not formatted
    # by the driver twice a row, a good part of the client's work a job.
    now_text = now.isoformat()
    written = []
    with _copying(connection, table, ["id", *columns, "run_at", "expires_at", "enqueued_at"]) as copy:
        write = copy.write_row
        for job, pk, row in zip(jobs, ids, rows, strict=True):
            run_at = time_at(job.run_at, now)
            expires_at = time_at(job.expires_at, now)
            write((pk, *row, now_text if run_at is now else run_at, expires_at, now_text, *same))
            written.append({"id": pk, "run_at": run_at, "expires_at": expires_at, "enqueued_at": now})
    return written


def copy_rows(
    connection: BaseDatabaseWrapper,
    table: str,
    columns: Sequence[str],
    rows: Iterable[tuple[Any, ...]],
    times: dict[str, Any],
) -> int:
    """``enqueue_rows``' ``COPY``: ``rows`` (values of ``columns``) into ``table``
    (quoted), each with the same ``times`` (``run_at`` and ``expires_at``: a column left
    to its default, the database's clock, takes no value; the caller made a delay a time).
    How many were written."""
    when: dict[str, Any] = {}
    for name, value in times.items():
        if not isinstance(value, DatabaseDefault):
            when[name] = connection.ops.adapt_datetimefield_value(value)
    tail = (*when.values(), *_SAME_FOR_ALL.values())
    written = 0
    with _copying(connection, table, [*columns, *when]) as copy:
        for row in rows:
            copy.write_row((*row, *tail))
            written += 1
    return written


@contextlib.contextmanager
def _copying(connection: BaseDatabaseWrapper, table: str, columns: Sequence[str]) -> Iterator[Copy]:
    """A ``COPY`` into ``table``'s ``columns`` and the columns every new job starts with
    the same value in (given last, by the caller: :data:`_SAME_FOR_ALL`)."""
    names = ", ".join(map(connection.ops.quote_name, [*columns, *_SAME_FOR_ALL]))
    # Django wraps what execute() raises (IntegrityError, ...), not what the driver's copy() does.
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy,
    ):
        yield copy
