"""A migration operation for a constraint that the code now writes differently on
SQLite while the migration state stays the same: SQLite keeps each index's statement as
it was run (``sqlite_master``), so a change to how ``create_sql`` words a partial
index's condition reaches existing databases only through a migration that remakes it.

Only on SQLite, whose file lock keeps every writer out while the migration's
transaction drops and creates the index: no job is written between the two. On
PostgreSQL an equivalent rewording is not worth a unique index's rebuild on a live
table, and MySQL/MariaDB's hidden-column stand-ins are not partial indexes."""

from __future__ import annotations

from typing import Any

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState


class RemakeSQLiteConstraint(Operation):
    """Remake ``model_name``'s constraint ``name`` on SQLite when its stored statement
    is not the one its ``create_sql`` writes now; nothing elsewhere, and nothing to undo
    (the stored statement it replaces said the same, only slower to evaluate)."""

    reversible = True

    def __init__(self, *, model_name: str, name: str) -> None:
        self.model_name, self.name = model_name, name

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__name__, [], {"model_name": self.model_name, "name": self.name})

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        """The state does not change: the constraint is the same."""

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        connection = schema_editor.connection
        model = to_state.apps.get_model(app_label, self.model_name)
        if connection.vendor != "sqlite" or not self.allow_migrate_model(connection.alias, model):
            return
        (constraint,) = [constraint for constraint in model._meta.constraints if constraint.name == self.name]
        wanted = constraint.create_sql(model, schema_editor)
        # sqlmigrate (collect_sql) prints the statements for any database, not the one it looks at.
        if not schema_editor.collect_sql:
            with connection.cursor() as cursor:
                cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = %s", [self.name])
                stored = cursor.fetchone()
            if stored is not None and stored[0] == str(wanted):
                return
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(self.name)}")
        schema_editor.execute(wanted)

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        """Nothing: the remade index serves the earlier migrations as well."""

    def describe(self) -> str:
        return f"Remake constraint {self.name} on {self.model_name} on SQLite if its statement changed"

    @property
    def migration_name_fragment(self) -> str:
        return f"remake_{self.name.lower()}"
