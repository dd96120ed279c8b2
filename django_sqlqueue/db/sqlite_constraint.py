"""Migration operations for a constraint that is now worded differently, to be cheaper
for SQLite to evaluate, while it says the same: SQLite keeps each statement as it was
run (``sqlite_master``), so a new wording reaches existing databases only through a
migration that remakes the index, or for a ``CHECK`` the table.

Only on SQLite, whose file lock keeps every writer out while the migration's
transaction remakes it: no job is written in between. On PostgreSQL an equivalent
rewording is not worth an index's rebuild, or a check's validating scan under an
exclusive lock, on a live table; MySQL/MariaDB's index stand-ins are hidden columns,
not partial indexes, and its checks cost nothing that a rewording would save."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState


class _OnSQLiteOnly(Operation):
    """An operation on ``model_name`` that writes on SQLite only, and has nothing to
    undo: what it leaves says the same as what it replaced, so it serves the earlier
    migrations as well."""

    reversible = True
    model_name: str

    def _sqlite_model(self, app_label: str, connection: Any, state: ProjectState) -> Any:
        """The model in ``state`` when it is to be changed here: on SQLite, on a database
        the routers let migrate it; else None."""
        model = state.apps.get_model(app_label, self.model_name)
        if connection.vendor != "sqlite" or not self.allow_migrate_model(connection.alias, model):
            return None
        return model

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        """Nothing: see the class."""


#: The temporary table that holds a remade table's ``AUTOINCREMENT`` counter meanwhile.
COUNTER = "sqlqueue_remade_counter"


class RemakeSQLiteConstraint(_OnSQLiteOnly):
    """Remake ``model_name``'s constraint ``name`` on SQLite when its stored statement
    is not the one its ``create_sql`` writes now; nothing elsewhere, and nothing to undo
    (the stored statement it replaces said the same, only slower to evaluate)."""

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
        model = self._sqlite_model(app_label, connection, to_state)
        if model is None:
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

    def describe(self) -> str:
        return f"Remake constraint {self.name} on {self.model_name} on SQLite if its statement changed"

    @property
    def migration_name_fragment(self) -> str:
        return f"remake_{self.name.lower()}"


class RewordSQLiteCheck(_OnSQLiteOnly):
    """Replace ``model_name``'s check constraint of ``constraint``'s name by
    ``constraint``, which says the same in other words. On SQLite the table is remade
    (the one way it changes a ``CHECK``: a copy of every row, under its file lock),
    keeping its ``AUTOINCREMENT`` counter, which Django's remake resets to the highest
    id left, so ids of deleted jobs would be handed out again. Nothing elsewhere, and
    nothing to undo: the stored condition says the same."""

    def __init__(self, *, model_name: str, constraint: models.CheckConstraint) -> None:
        self.model_name, self.constraint = model_name, constraint

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__name__, [], {"model_name": self.model_name, "constraint": self.constraint})

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        state.remove_constraint(app_label, self.model_name.lower(), self.constraint.name)
        state.add_constraint(app_label, self.model_name.lower(), self.constraint)

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        model = self._sqlite_model(app_label, schema_editor.connection, to_state)
        if model is None:
            return
        table = model._meta.db_table
        # SQL alone, no reading in Python, so that sqlmigrate prints the whole of it.
        schema_editor.execute(
            f"CREATE TEMP TABLE {COUNTER} AS SELECT seq FROM sqlite_sequence WHERE name = %s", [table]
        )
        schema_editor.add_constraint(model, self.constraint)  # SQLite: the table remade as the model says
        schema_editor.execute(
            f"UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT seq FROM temp.{COUNTER})) "
            f"WHERE name = %s AND EXISTS (SELECT 1 FROM temp.{COUNTER})",
            [table],
        )
        schema_editor.execute(
            f"INSERT INTO sqlite_sequence (name, seq) SELECT %s, seq FROM temp.{COUNTER} "
            "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = %s)",
            [table, table],
        )
        schema_editor.execute(f"DROP TABLE temp.{COUNTER}")

    def describe(self) -> str:
        return f"Reword check constraint {self.constraint.name} on {self.model_name} (remade on SQLite)"

    @property
    def migration_name_fragment(self) -> str:
        return f"reword_{self.constraint.name.lower()}"
