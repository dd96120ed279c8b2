"""A command that runs the queue first makes sure its tables are there and current:
a worker started before ``migrate`` would otherwise fail on every claim."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job


def unapplied_migrations() -> list[str]:
    """The app's migrations not applied to the database that holds the jobs."""
    executor = MigrationExecutor(connections[queue_db(Job)])
    targets = [key for key in executor.loader.graph.leaf_nodes() if key[0] == Job._meta.app_label]
    return [migration.name for migration, _ in executor.migration_plan(targets)]


def require_migrated() -> None:
    """Raise ``CommandError`` naming the migrations still to apply, if any."""
    if unapplied := unapplied_migrations():
        raise CommandError(f"The queue's tables are not up to date ({', '.join(unapplied)}): run manage.py migrate.")
