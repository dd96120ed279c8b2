"""A command that works on the queue first makes sure its tables can be read and are
current: a worker started before ``migrate``, or while the database is down, would
otherwise fail on every claim, or stop with a driver's traceback."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor

from django_sqlqueue.db.pooling import without_pool
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
        return f"The queue's migrations are not applied ({', '.join(unapplied)}): run manage.py migrate."
    return None


def does_not_answer(alias: str, error: DatabaseError) -> str:
    """One line, as a probe's log shows it: psycopg's message runs over several."""
    return f"The database {alias!r} does not answer: {' '.join(str(error).split())}"


class QueueCommand(BaseCommand):
    """A command on the queue's tables: it says in one line, exit status 1, when they
    cannot be read, and runs Django's system checks only after. The checks query the
    database (a JSONField's support of JSON, for one), so run first they would answer a
    database that is down with a traceback. As ``runserver`` does, the checks run once
    from the command line and are skipped by ``call_command``; they include the checks
    that ask the database, which Django runs only for ``migrate`` and ``check --database``.
    Run from the command line, it connects without Django's connection pool (``db.pooling``)."""

    requires_system_checks: list[str] = []

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument("--skip-checks", action="store_true", help="Skip system checks.")
        return parser

    def run_from_argv(self, argv: list[str]) -> None:
        # From the command line the process is the command's own.
        without_pool()
        super().run_from_argv(argv)

    def execute(self, *args: Any, **options: Any) -> str | None:
        if problem := tables_problem():
            raise CommandError(problem)
        if options.get("stderr"):  # where the checks' warnings go: set by Django only after
            self.stderr = OutputWrapper(options["stderr"])
        if not options.get("skip_checks"):
            # With the database's checks too (its server's version, SQLite's journal mode).
            self.check(databases=[queue_db(Job)])
        return super().execute(*args, **options)
