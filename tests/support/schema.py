"""The queue's tables as the database holds them, described in plain data (JSON's), so
that two databases built by two ways of migrating can be compared: each table's columns
(type, null, default, collation, a generated column's expression), its indexes (columns,
uniqueness, condition), its checks and foreign keys, and each database's extras
(PostgreSQL's storage parameters and triggers, SQLite's ``AUTOINCREMENT``).

Column order is left out: a column added by a later migration comes last, where a
table created at once has it in the model's order, and nothing reads columns by
position."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from django.db import connection

#: The described schema of the tables the old chain of migrations (0001 to 0031) built,
#: one file per database, kept when the chain was squashed into ``0001_initial``.
SQUASHED_FROM = Path(__file__).parent / "schema"

Description = dict[str, Any]


def app_tables() -> list[str]:
    with connection.cursor() as cursor:
        return sorted(
            name for name in connection.introspection.table_names(cursor) if name.startswith("django_sqlqueue_")
        )


def rows(sql: str, params: list[Any] | None = None) -> list[list[Any]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return [list(row) for row in cursor.fetchall()]


def describe() -> Description:
    """The app's tables on the database under test, by name."""
    describe_table = {"postgresql": postgresql_table, "mysql": mysql_table, "sqlite": sqlite_table}[connection.vendor]
    return {table: describe_table(table) for table in app_tables()}


def old_chain_schema() -> Description:
    """What the old chain built on the database under test."""
    return json.loads((SQUASHED_FROM / f"{connection.vendor}.json").read_text())  # type: ignore[no-any-return]


def postgresql_table(table: str) -> Description:
    return {
        "columns": {
            name: rest
            for name, *rest in rows(
                "SELECT column_name, data_type, character_maximum_length, numeric_precision, is_nullable,"
                " column_default, collation_name, is_identity, identity_generation, generation_expression"
                " FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s",
                [table],
            )
        },
        "indexes": dict(
            rows(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %s",
                [table],
            )
        ),
        "constraints": dict(
            rows(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass",
                [table],
            )
        ),
        "reloptions": rows("SELECT reloptions FROM pg_class WHERE oid = %s::regclass", [table])[0][0],
        "triggers": dict(
            rows(
                "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger"
                " WHERE tgrelid = %s::regclass AND NOT tgisinternal",
                [table],
            )
        ),
    }


def mysql_table(table: str) -> Description:
    indexes: dict[str, dict[str, Any]] = {}
    for name, non_unique, column, sub_part in rows(
        "SELECT index_name, non_unique, column_name, sub_part FROM information_schema.statistics"
        " WHERE table_schema = DATABASE() AND table_name = %s ORDER BY index_name, seq_in_index",
        [table],
    ):
        index = indexes.setdefault(name, {"unique": not non_unique, "columns": []})
        index["columns"].append([column, sub_part])
    return {
        "columns": {
            name: rest
            for name, *rest in rows(
                "SELECT column_name, column_type, is_nullable, column_default, collation_name, extra,"
                " generation_expression FROM information_schema.columns"
                " WHERE table_schema = DATABASE() AND table_name = %s",
                [table],
            )
        },
        "indexes": indexes,
        "checks": dict(
            rows(
                "SELECT constraint_name, check_clause FROM information_schema.check_constraints"
                " WHERE constraint_schema = DATABASE() AND table_name = %s",
                [table],
            )
        ),
        "foreign_keys": {
            name: rest
            for name, *rest in rows(
                "SELECT constraint_name, referenced_table_name, update_rule, delete_rule"
                " FROM information_schema.referential_constraints"
                " WHERE constraint_schema = DATABASE() AND table_name = %s",
                [table],
            )
        },
        "engine": rows(
            "SELECT engine, table_collation FROM information_schema.tables"
            " WHERE table_schema = DATABASE() AND table_name = %s",
            [table],
        )[0],
    }


def sqlite_table(table: str) -> Description:
    (create,) = rows("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [table])[0]
    return {
        "columns": {
            name: [kind, not_null, default, primary_key]
            for _, name, kind, not_null, default, primary_key in rows(f"PRAGMA table_info({table})")
        },
        "indexes": dict(
            rows(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = %s AND sql IS NOT NULL",
                [table],
            )
        ),
        "unique_columns": sorted(
            [
                [column for *_, column in rows(f"PRAGMA index_info({name})")]
                for _, name, unique, origin, _ in rows(f"PRAGMA index_list({table})")
                if unique and origin == "u"
            ]
        ),
        "checks": checks(create),
        "foreign_keys": sorted(
            [row[2:] for row in rows(f"PRAGMA foreign_key_list({table})")], key=lambda row: [str(part) for part in row]
        ),
        "autoincrement": "AUTOINCREMENT" in create,
    }


def checks(create: str) -> dict[str, str]:
    """The named ``CHECK`` constraints of SQLite's ``CREATE TABLE`` statement, each with
    its condition."""
    found = {}
    for match in re.finditer(r'CONSTRAINT "(\w+)" CHECK \(', create):
        depth, end = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(create[end], 0)
            end += 1
        found[match.group(1)] = create[match.end() : end - 1]
    return found
