"""Whether the queue's tables can be read and are current: a worker started before
``migrate``, or while the database is down, would otherwise fail on every claim, or stop
with a driver's traceback. The commands (``management/base.py``) and the health probe ask."""

from __future__ import annotations

from django.db import DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor

from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job


def unapplied_migrations() -> list[str]:
    """The app's migrations not applied to the database that holds the jobs."""
    executor = MigrationExecutor(connections[queue_db(Job)])
    targets = [key for key in executor.loader.graph.leaf_nodes() if key[0] == Job._meta.app_label]
    return [migration.name for migration, _ in executor.migration_plan(targets)]


def tables_problem() -> str | None:
    """Why the queue's tables cannot be read, in one line: the database that holds the
    jobs does not answer, or the queue's migrations are not applied; None when they can."""
    alias = queue_db(Job)
    try:
        # A query, not just a connection: a connection kept from before may be dead.
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
        unapplied = unapplied_migrations()
    except DatabaseError as error:
        return does_not_answer(alias, error)
    if unapplied:
        # A new database lacks them all: their first and last say as much as thirty names.
        named = ", ".join(unapplied) if len(unapplied) <= 3 else f"{len(unapplied)}: {unapplied[0]} to {unapplied[-1]}"
        return f"The queue's migrations are not applied ({named}): run manage.py migrate."
    return None


def does_not_answer(alias: str, error: DatabaseError) -> str:
    """One line, as a probe's log shows it: psycopg's message runs over several."""
    return f"The database {alias!r} does not answer: {' '.join(str(error).split())}"
