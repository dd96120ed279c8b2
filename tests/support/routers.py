"""Database routers for the tests' ``replica`` alias."""

from __future__ import annotations

from typing import Any

from django.db import models


class PrimaryReplicaRouter:
    """Reads from ``replica``, writes to ``default``."""

    def db_for_read(self, model: type[models.Model], **hints: Any) -> str:
        return "replica"

    def db_for_write(self, model: type[models.Model], **hints: Any) -> str:
        return "default"

    def allow_relation(self, obj1: models.Model, obj2: models.Model, **hints: Any) -> bool:
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == "default"


class ReplicaNeverMigrated:
    """The tests' settings always have it: the replica is a copy of the primary, so no
    model is migrated or checked there (a read-only connection cannot even open the
    write transaction some checks take). Reads and writes are left to the default."""

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return False if db == "replica" else None


class QueueElsewhere:
    """Sends the queue's tables to the ``replica`` alias (as a project with a database of
    its own for the queue would), everything else to the default."""

    def db_for_write(self, model: type[models.Model], **hints: Any) -> str | None:
        return "replica" if model._meta.app_label == "django_sqlqueue" else None

    db_for_read = db_for_write
