"""An index over the jobs in one status, that each database can build."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.backends.ddl_references import Statement


class StatusIndex(models.Index):
    """A partial index on ``status = <status>`` where the database has partial indexes
    (PostgreSQL, SQLite), so it holds only the jobs in that status and stays small
    however many finished jobs the table keeps; on MySQL/MariaDB, which has none, the
    same columns led by ``status``.

    Django would warn and then skip a partial index on MySQL; this class builds the
    right one for each database under one name, so the migration stays the same."""

    def __init__(self, *, status: str, fields: list[str], name: str) -> None:
        super().__init__(fields=fields, name=name)
        self.status = status

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        kwargs = {"status": str(self.status), "fields": list(self.fields), "name": self.name}
        return ("django_sqlqueue.db.indexes.StatusIndex", (), kwargs)

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        if schema_editor.connection.features.supports_partial_indexes:
            index = models.Index(fields=self.fields, name=self.name, condition=models.Q(status=self.status))
        else:
            index = models.Index(fields=["status", *self.fields], name=self.name)
        return index.create_sql(model, schema_editor, using=using, **kwargs)


class KeyedIndex(models.Index):
    """An index over the rows whose first field is set: partial (``IS NOT NULL``) on
    PostgreSQL and SQLite, so jobs without that field never touch it; on MySQL/MariaDB
    the first field alone, so that a status change of such a job does not either."""

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return ("django_sqlqueue.db.indexes.KeyedIndex", (), {"fields": list(self.fields), "name": self.name})

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        first = self.fields[0]
        if schema_editor.connection.features.supports_partial_indexes:
            index = models.Index(fields=self.fields, name=self.name, condition=models.Q(**{f"{first}__isnull": False}))
        else:
            index = models.Index(fields=[first], name=self.name)
        return index.create_sql(model, schema_editor, using=using, **kwargs)
