"""MySQL/MariaDB text columns and connections in a character set other than utf8mb4,
set up for one test and put back after it: the legacy schemas and settings the
queue's charset checks and ``enqueue`` must handle."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from django_sqlqueue.db import engines


@contextmanager
def column_in(charset: str, table: str, column: str) -> Iterator[None]:
    """``table.column`` in ``charset`` while the block runs, then as it was. A DDL
    statement commits on MySQL: use it in a ``transaction=True`` test."""
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_type, collation_name, is_nullable FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name = %s AND column_name = %s",
            [table, column],
        )
        column_type, collation, nullable = cursor.fetchone()
        null = "NULL" if nullable == "YES" else "NOT NULL"
        cursor.execute(f"ALTER TABLE {qn(table)} MODIFY {qn(column)} {column_type} CHARACTER SET {charset} {null}")
        engines.forget()
        try:
            yield
        finally:
            cursor.execute(f"ALTER TABLE {qn(table)} MODIFY {qn(column)} {column_type} COLLATE {collation} {null}")
            engines.forget()


@contextmanager
def session_variable(name: str, value: str) -> Iterator[None]:
    """The connection's session variable ``name`` (``character_set_client``,
    ``sql_mode``) set to ``value`` while the block runs, then as it was."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT @@SESSION.{name}")
        (before,) = cursor.fetchone()
        cursor.execute(f"SET SESSION {name} = %s", [value])
        engines.forget()
        try:
            yield
        finally:
            cursor.execute(f"SET SESSION {name} = %s", [before])
            engines.forget()
