"""How many new jobs one multi-row ``INSERT`` may carry on MySQL/MariaDB, whose server
refuses a statement larger than ``max_allowed_packet`` (16 MiB by default), and
MariaDB ends the connection that sent it.

Rows are counted at their worst as SQL text: every byte of a string escaped (two
bytes), so a statement cut here always fits, and rows of ordinary size still go a
thousand at a time. The other databases bind parameters apart from the statement and
take any size the columns do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.exceptions import InvalidJobError

#: What a statement holds beside its rows' values (its text, the columns, the times).
_STATEMENT_OVERHEAD = 64 * 1024
#: A row's SQL beside its strings: placeholders, numbers, times, the constant columns.
_ROW_OVERHEAD = 512


def most_statement_bytes(connection: BaseDatabaseWrapper) -> int | None:
    """The most bytes of values one statement on ``connection`` may carry; None where
    the database sets no such limit."""
    if connection.vendor != "mysql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        (packet,) = cursor.fetchone()
    return int(packet) - _STATEMENT_OVERHEAD


def row_bytes(values: Sequence[Any]) -> int:
    """The most bytes ``values`` (a row's bound values) take as SQL text."""
    # Joined, the strings are measured with one call, not one each.
    text = "".join([value for value in values if type(value) is str])
    return _ROW_OVERHEAD + 2 * (len(text) if text.isascii() else len(text.encode()))


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
                f"Cannot enqueue {tasks[index]}: its arguments and options take up to {size:,} bytes as SQL, more "
                f"than the {most_bytes + _STATEMENT_OVERHEAD:,} of the server's max_allowed_packet: pass a "
                "reference to the data (a row's id, a file's name) rather than the data, or raise max_allowed_packet."
            )
        if not starts or rows == rows_per_statement or taken + size > most_bytes:
            starts.append(index)
            taken = rows = 0
        taken += size
        rows += 1
    return starts
