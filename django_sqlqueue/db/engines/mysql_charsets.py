"""MySQL/MariaDB: the character sets the queue's text travels through (the connection's
and each column's), what of a new job's text they cannot store, and the checks' problems
and hints when the tables, the connection or the SQL mode would change text.

A table in ``latin1`` (MariaDB's compiled-in default) or ``utf8mb3`` (common in older
schemas), or a connection in either, cannot hold every character: in strict mode the
insert fails with a raw ``OperationalError`` 1366, and otherwise the character is
stored as ``?``, so a job lands on a queue no worker claims from, or a unique key
matches no holder; a connection in utf8mb3 fails even a query with 1267 ("Illegal mix
of collations") on a character outside it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.rules.validation import charset_problem

#: The character set that holds every character, the one the queue's tables and
#: connections need on MySQL/MariaDB.
FULL = "utf8mb4"
#: The session variables that name the character sets a statement's text travels in.
_SESSION = ("character_set_client", "character_set_connection")


class TextCharsets:
    """A MySQL connection's character sets (:data:`_SESSION`) and those of the text
    columns of a table, read once per connection: what the text written to each column
    must fit."""

    def __init__(self, model: type[models.Model], connection: BaseDatabaseWrapper) -> None:
        #: Each text column's character sets, in the order the text meets them.
        self.columns: dict[str, list[tuple[str, str]]] = {}
        session = [(f"this connection's {name}", charset) for name, charset in session_charsets(connection).items()]
        for table, column, charset in column_charsets(connection, [model._meta.db_table]):
            self.columns[column] = [*session, (f"the column {table}.{column}", charset)]


def text_problem(columns: Mapping[str, list[tuple[str, str]]], texts: Mapping[str, str | None]) -> str | None:
    """Why one of ``texts`` (a column's name to its text) does not fit the character
    sets of its column (:attr:`TextCharsets.columns`), or None."""
    for column, text in texts.items():
        for where, charset in columns.get(column, []):
            if text is not None and (problem := charset_problem(text, charset)):
                return f"{column} {text!r:.100} {problem} ({where}; the queue needs {FULL})"
    return None


def session_charsets(connection: BaseDatabaseWrapper) -> dict[str, str]:
    """The character sets of a MySQL connection's statements (:data:`_SESSION`)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(f'@@{name}' for name in _SESSION)}")
        return dict(zip(_SESSION, cursor.fetchone(), strict=True))


def column_charsets(connection: BaseDatabaseWrapper, tables: Sequence[str]) -> list[tuple[str, str, str]]:
    """``(table, column, character set)`` of every text column of these MySQL ``tables``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name, character_set_name FROM information_schema.columns "
            f"WHERE table_schema = DATABASE() AND character_set_name IS NOT NULL "
            f"AND table_name IN ({', '.join(['%s'] * len(tables))}) ORDER BY table_name, ordinal_position",
            list(tables),
        )
        return [(table, column, charset) for table, column, charset in cursor.fetchall()]


def tables_charset_problem(connection: BaseDatabaseWrapper, tables: Sequence[str]) -> str | None:
    """Why this MySQL database's queue ``tables`` cannot store every name and key, or
    None; asks the database."""
    narrow = [f"{table}.{column} ({charset})" for table, column, charset in column_charsets(connection, tables)]
    narrow = [column for column in narrow if not column.endswith(f"({FULL})")]
    if not narrow:
        return None
    shown = ", ".join(narrow[:6]) + (f" and {len(narrow) - 6} more" if len(narrow) > 6 else "")
    return (
        f"MySQL database {connection.alias!r} has text columns of the queue's tables in a character set "
        f"other than {FULL}, which cannot store every queue name and key: {shown}"
    )


#: How to put the queue's tables in utf8mb4, for the check that finds they are not.
TABLES_HINT = (
    f"Convert each table: ALTER TABLE <table> CONVERT TO CHARACTER SET {FULL} COLLATE {FULL}_unicode_ci; "
    "then give the queue's name columns their binary collation back, with the statements that "
    "Troubleshooting in django-sqlqueue's documentation shows. Until then enqueue "
    "refuses a job whose text the tables cannot store."
)


def connection_charset_problem(connection: BaseDatabaseWrapper) -> str | None:
    """Why this MySQL connection cannot carry every name and key, or None; asks the database."""
    narrow = {name: charset for name, charset in session_charsets(connection).items() if charset != FULL}
    if not narrow:
        return None
    shown = ", ".join(f"{name} {charset}" for name, charset in narrow.items())
    return f"MySQL database {connection.alias!r} is connected with {shown}, not {FULL}"


#: How to connect in utf8mb4, for the check that finds a connection is not.
CONNECTION_HINT = (
    f"Remove 'charset' from this database's OPTIONS (Django connects in {FULL}) or set it to '{FULL}', "
    "and remove any SET NAMES from its init_command."
)


def strict_mode_problem(connection: BaseDatabaseWrapper) -> str | None:
    """Why this MySQL connection would write what it cannot store, or None; asks the database."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@sql_mode")
        (mode,) = cursor.fetchone()
    if {"STRICT_TRANS_TABLES", "STRICT_ALL_TABLES"} & set(mode.upper().split(",")):
        return None
    return (
        f"MySQL database {connection.alias!r} runs without strict mode (sql_mode {mode!r}): text and values it "
        "cannot store are changed (? for a character, a name cut short) rather than refused"
    )


#: How to turn strict mode on, for the check that finds it off.
STRICT_HINT = (
    'Add "init_command": "SET sql_mode=\'STRICT_TRANS_TABLES\'" to this database\'s OPTIONS, or set '
    "sql_mode in the server's configuration."
)
