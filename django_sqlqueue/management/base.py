"""The base of the commands that work on the queue: they first make sure its tables can
be read and are current (``db/migrated.py``), and say so in one line when not."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper

from django_sqlqueue.db.migrated import tables_problem
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job
from django_sqlqueue.runner.pooling import without_pool


class QueueCommand(BaseCommand):
    """A command on the queue's tables: it says in one line, exit status 1, when they
    cannot be read, and runs Django's system checks only after. The checks query the
    database (a JSONField's support of JSON, for one), so run first they would answer a
    database that is down with a traceback. As ``runserver`` does, the checks run once
    from the command line and are skipped by ``call_command``; they include the checks
    that ask the database, which Django runs only for ``migrate`` and ``check --database``.
    Run from the command line, it connects without Django's connection pool (``runner/pooling``)."""

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
