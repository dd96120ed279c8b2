"""The database router most projects with a replica have."""

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
