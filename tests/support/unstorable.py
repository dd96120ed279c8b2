"""Values that are JSON to Python but that the database under test refuses to store
in a JSON column, for the tests of what becomes of such an outcome."""

from __future__ import annotations

from typing import Any

from django.db import connection


def nested(depth: int) -> Any:
    """A list in a list ... ``depth`` levels deep."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def refused_json() -> Any:
    """JSON this database refuses: a NUL in a string for PostgreSQL's ``jsonb``, nesting
    deeper than MariaDB's 32 levels or SQLite's 1000 (2000 before SQLite 3.45) for their
    ``JSON_VALID`` check."""
    if connection.vendor == "postgresql":
        return "a NUL \x00 in a string"
    return nested(33 if connection.vendor == "mysql" else 2001)


def max_allowed_packet() -> int:
    """MariaDB's largest statement, in bytes."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        return int(cursor.fetchone()[0])
