"""MySQL/MariaDB: how many new jobs one multi-row ``INSERT`` may carry, whose server
refuses a statement larger than ``max_allowed_packet`` (16 MiB by default), and
MariaDB ends the connection that sent it; and whether a statement whose connection
ended was such a refusal (:func:`too_large`) or the connection lost.

Rows are measured as the SQL text they are sent as (their values escaped,
:mod:`~django_sqlqueue.db.engines.mysql_literals`), so a statement cut here always fits, and rows of
ordinary size still go a thousand at a time. The other databases bind parameters apart
from the statement and take any size the columns do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.exceptions import InvalidJobError

#: What a statement holds beside its rows (its text before ``VALUES``, the columns, a
#: ``RETURNING``).
_STATEMENT_OVERHEAD = 64 * 1024


def most_statement_bytes(connection: BaseDatabaseWrapper) -> int:
    """The most bytes of values one statement on ``connection`` may carry."""
    return _max_allowed_packet(connection) - _STATEMENT_OVERHEAD


def too_large(connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any]) -> bool:
    """Whether ``sql`` with ``params`` is larger than the server's ``max_allowed_packet``
    on ``connection``: MariaDB ends the connection of such a statement, and past a few
    times that size the client sees only the connection ending ('server has gone
    away'), the words of any other lost connection. Asks the server, so a
    connection it ended is opened again (and a server still unavailable raises)."""
    packet = _max_allowed_packet(connection)
    # The text the driver sends: each value escaped into the statement.
    literal = cast(Any, connection.connection).literal
    return len(sql.encode()) + sum(len(literal(param)) for param in params) > packet


def _max_allowed_packet(connection: BaseDatabaseWrapper) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        (packet,) = cursor.fetchone()
    return int(packet)


def text_bytes(row: str) -> int:
    """The bytes ``row`` (a row's SQL text) takes in a statement, with the comma and
    space that part it from the next: as UTF-8, which no character set the connection
    may use makes longer."""
    return 2 + (len(row) if row.isascii() else len(row.encode()))


def cut(sizes: Sequence[int], rows_per_statement: int, most_bytes: int, tasks: Sequence[str]) -> list[int]:
    """Where statements of rows of ``sizes`` (in bytes, of jobs of ``tasks``) start:
    at most ``rows_per_statement`` rows and ``most_bytes`` bytes each. Raises
    :class:`~django_sqlqueue.exceptions.InvalidJobError` for a row that no statement
    holds, before any is written."""
    starts: list[int] = []
    taken = rows = 0
    for index, size in enumerate(sizes):
        if size > most_bytes:
            raise InvalidJobError(
                f"Cannot enqueue {tasks[index]}: its arguments and options take {size:,} bytes as SQL, more "
                f"than the {most_bytes + _STATEMENT_OVERHEAD:,} of the server's max_allowed_packet: pass a "
                "reference to the data (a row's id, a file's name) rather than the data, or raise max_allowed_packet."
            )
        if not starts or rows == rows_per_statement or taken + size > most_bytes:
            starts.append(index)
            taken = rows = 0
        taken += size
        rows += 1
    return starts
