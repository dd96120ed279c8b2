"""What a MySQL/MariaDB database can store of the queue's text (a new job's, a pause's,
a worker's name), by the character sets it travels through: the connection's and each
column's.

A table in ``latin1`` (MariaDB's compiled-in default) or ``utf8mb3`` (common in older
schemas), or a connection in either, cannot hold every character: in strict mode the
insert fails with a raw ``OperationalError`` 1366, and otherwise the character is
stored as ``?``, so a job lands on a queue no worker claims from, or a unique key
matches no holder; a connection in utf8mb3 fails even a query with 1267 ("Illegal mix
of collations") on a character outside it. ``enqueue``, ``pause_queue`` and
``runworkers`` ask here first and refuse such text (each engine knows what its
database stores); the system checks ``sqlqueue.W003``-``W005`` say what to change.
PostgreSQL and SQLite store every character the validation lets through."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import connections, models

from django_sqlqueue.db.engines import engine


def unstorable(model: type[models.Model], using: str, texts: Mapping[str, str | None]) -> str | None:
    """Why ``using``'s database would not store one of ``texts`` (a column's name to
    the text written to it) as itself, naming the column and the character set; None
    when it stores them all. Text in ASCII, which every character set holds, passes
    without a question to the database (the usual case: no query at all)."""
    if all(text is None or text.isascii() for text in texts.values()):
        return None
    return engine(connections[using]).text_problem(model, texts)
