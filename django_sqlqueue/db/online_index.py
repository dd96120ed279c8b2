"""A migration operation that remakes an index of a live table without stopping its
writers: the claim and finish go on while it runs.

Django's ``RemoveIndex`` then ``AddIndex`` would drop the index first (the queries it
served read the whole table until it is back) and, on PostgreSQL, build the new one
under a lock that blocks every write to the table for the whole build. This operation
builds the new index beside the old one under a temporary name, without blocking
writes (``CREATE INDEX CONCURRENTLY``), drops the old one the same way, and gives the
new one its name (a rename takes a lock that blocks no reader or writer).

An interrupted run leaves at most an unfinished index under the temporary name
(PostgreSQL marks it invalid): the next run drops it and starts again. ``CONCURRENTLY``
cannot run in a transaction, so a migration using this sets ``atomic = False``.

On every database the index is remade only if its statement changed. Elsewhere than on
PostgreSQL it is dropped and built again: MariaDB builds an index in place without
blocking writes (online DDL); SQLite has no concurrent writers to spare, and locks the
file for the build."""

from __future__ import annotations

import copy
from typing import Any

from django.db import models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState


class ReplaceIndex(Operation):
    """Replace ``model_name``'s index ``old`` with ``new`` (the same name), online; the
    reverse puts ``old`` back the same way."""

    def __init__(self, *, model_name: str, old: models.Index, new: models.Index) -> None:
        if old.name != new.name:
            raise ValueError(f"ReplaceIndex keeps the index's name: {old.name!r} is not {new.name!r}")
        self.model_name, self.old, self.new = model_name, old, new

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__name__, [], {"model_name": self.model_name, "old": self.old, "new": self.new})

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        state.remove_index(app_label, self.model_name.lower(), self.old.name)
        state.add_index(app_label, self.model_name.lower(), self.new)

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        self._swap(app_label, schema_editor, to_state, self.old, self.new)

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        self._swap(app_label, schema_editor, to_state, self.new, self.old)

    def describe(self) -> str:
        return f"Remake index {self.new.name} on {self.model_name} online"

    @property
    def migration_name_fragment(self) -> str:
        return f"{self.model_name.lower()}_{self.new.name.lower()}"

    def _swap(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        state: ProjectState,
        old: models.Index,
        new: models.Index,
    ) -> None:
        model = state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        if str(old.create_sql(model, schema_editor)) == str(new.create_sql(model, schema_editor)):
            return  # the same index on this database
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.remove_index(model, old)
            schema_editor.add_index(model, new)
            return
        if schema_editor.connection.in_atomic_block:
            raise RuntimeError(
                f"ReplaceIndex builds {new.name} with CREATE INDEX CONCURRENTLY, which cannot run in a "
                "transaction: set atomic = False on the migration"
            )
        built = copy.copy(new)
        built.name = f"{new.name}_new"
        qn = schema_editor.quote_name
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {qn(built.name)}")
        schema_editor.execute(built.create_sql(model, schema_editor, concurrently=True))
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {qn(old.name)}")
        schema_editor.execute(f"ALTER INDEX {qn(built.name)} RENAME TO {qn(new.name)}")
