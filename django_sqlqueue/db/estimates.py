"""What the database itself estimates of a table, without reading its rows: how many
rows it holds (PostgreSQL's ``reltuples``, InnoDB's ``table_rows``, both kept by
``ANALYZE`` and the statistics' own refreshes) and, on PostgreSQL, the share of the
table each common value of a column holds (``pg_stats``).

The one place that asks: the admin's paginator (``admin/filters.py``) and the counts
by queue and status (``reporting/counting.py``) read their estimates here. SQLite
keeps neither: where there is no estimate the caller counts or samples."""

from __future__ import annotations

from typing import Any

from django.db import connections
from django.db.models import QuerySet

_ROWS_SQL = {
    "postgresql": "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)",
    "mysql": "SELECT table_rows FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = %s",
}

#: The planner's statistics of some columns: each common value and the share of the table it holds.
_SHARES_SQL = """
    SELECT s.attname, s.most_common_vals::text::text[], s.most_common_freqs
    FROM pg_class c
    JOIN pg_stats s ON s.schemaname = c.relnamespace::regnamespace::text AND s.tablename = c.relname
    WHERE c.oid = to_regclass(%s) AND s.attname = ANY(%s)
"""


def estimated_rows(rows: QuerySet[Any]) -> int:
    """The database's own estimate of the rows in the queryset's table, or -1 where it
    has none: SQLite, or a PostgreSQL table never analysed."""
    connection = connections[rows.db]
    table = rows.model._meta.db_table
    if connection.vendor not in _ROWS_SQL:
        return -1
    # PostgreSQL looks the table up by its quoted name; information_schema by its plain one.
    name = connection.ops.quote_name(table) if connection.vendor == "postgresql" else table
    with connection.cursor() as cursor:
        cursor.execute(_ROWS_SQL[connection.vendor], [name])
        row = cursor.fetchone()
    return -1 if row is None or row[0] is None else max(int(row[0]), -1)


def keeps_value_shares(using: str) -> bool:
    """Whether the database estimates each common value's share of a column
    (:func:`value_shares`): PostgreSQL does; elsewhere a caller samples instead."""
    return connections[using].vendor == "postgresql"


def value_shares(rows: QuerySet[Any], columns: list[str]) -> dict[str, dict[str, float]]:
    """Per column of ``columns``, its common values and the share of the table each
    holds, as PostgreSQL's last ``ANALYZE`` found them; a column it has no statistics
    for is left out (all of them before the first ``ANALYZE``, or where
    :func:`keeps_value_shares` is False)."""
    connection = connections[rows.db]
    if not keeps_value_shares(rows.db):
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_SHARES_SQL, [connection.ops.quote_name(rows.model._meta.db_table), columns])
        found = cursor.fetchall()
    return {column: dict(zip(values or [], freqs or [], strict=True)) for column, values, freqs in found}
