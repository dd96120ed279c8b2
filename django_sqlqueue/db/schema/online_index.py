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

On MySQL/MariaDB the new index is built beside the old one under the temporary name
too, then one ``ALTER TABLE`` drops the old one and renames the new (``RENAME INDEX``:
MariaDB 10.5.2+, MySQL 5.7+). An index on hidden ``VIRTUAL`` columns (``HiddenParts``)
is built in two statements, the columns alone (instant), then the index alone, which
the server builds in place without blocking writes: in one statement MariaDB would hold
a shared lock for the whole build (a virtual column's change cannot be combined with
another at ``LOCK=NONE``). The hidden columns only the old index used are dropped last,
alone, for the same reason (combined with the index's drop, MariaDB copies the table).
Each step looks at the table first (a leftover temporary index is dropped, a column
already there kept), so the next run finishes an interrupted one.

On every database the index is remade only if its statement changed. On SQLite it is
dropped and built again: there are no concurrent writers to spare, and SQLite locks
the file for the build."""

from __future__ import annotations

import copy
from collections.abc import Collection
from itertools import chain
from typing import Any

from django.db import models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.backends.ddl_references import Statement
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

from django_sqlqueue.db.schema.indexes import HiddenParts, alter_sql


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
        if schema_editor.connection.vendor == "mysql":
            _swap_mysql(model, schema_editor, old, new)
            return
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.remove_index(model, old)
            schema_editor.add_index(model, new)
            return
        if schema_editor.connection.in_atomic_block:
            raise RuntimeError(
                f"ReplaceIndex builds {new.name} with CREATE INDEX CONCURRENTLY, which cannot run in a "
                "transaction: set atomic = False on the migration"
            )
        built, qn = _renamed(new), schema_editor.quote_name
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {qn(built.name)}")
        schema_editor.execute(built.create_sql(model, schema_editor, concurrently=True))
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {qn(old.name)}")
        schema_editor.execute(f"ALTER INDEX {qn(built.name)} RENAME TO {qn(new.name)}")


def _renamed(index: models.Index) -> models.Index:
    """``index`` under its temporary name, beside the one it replaces."""
    built = copy.copy(index)
    built.name = f"{index.name}_new"
    return built


def _hidden_parts(
    index: models.Index, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor
) -> HiddenParts | None:
    """The hidden columns and index ``index`` is made of, if it is one that stands in
    for a partial index (``hidden_parts``); None for a plain index."""
    parts = getattr(index, "hidden_parts", None)
    return None if parts is None else parts(model, schema_editor)


def _hidden_columns(
    index: models.Index, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, *, indexed: bool = False
) -> list[str]:
    """The hidden columns ``index`` adds (and drops), if any; with ``indexed``, with the
    columns it is on (a plain index is on no hidden column)."""
    parts = _hidden_parts(index, model, schema_editor)
    return [] if parts is None else [*parts.column_names, *(parts.indexed if indexed else ())]


def _swap_mysql(
    model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, old: models.Index, new: models.Index
) -> None:
    """MySQL/MariaDB: build ``new`` beside ``old`` under its temporary name; then drop
    ``old`` and rename ``new`` in one statement (the old index serves until then), and
    drop the hidden columns ``old`` added that no index uses then (not ``new``, nor
    another), in a statement of their own (combined with an index's drop, a virtual
    column's has MariaDB copy the table). Each step looks at the table first, so that a
    run that stopped half-way is finished by the next."""
    built, qn, table = _renamed(new), schema_editor.quote_name, model._meta.db_table
    introspection = schema_editor.connection.introspection
    with schema_editor.connection.cursor() as cursor:
        indexes = introspection.get_constraints(cursor, table)
        columns = {column.name for column in introspection.get_table_description(cursor, table)}
    if built.name in indexes:
        schema_editor.execute(alter_sql(model, schema_editor, [f"DROP INDEX {qn(built.name)}"]))
    for statement in _build_sql(built, model, schema_editor, columns):
        schema_editor.execute(statement)
    dropped = [f"DROP INDEX {qn(old.name)}"] if old.name in indexes else []
    renamed = f"RENAME INDEX {qn(built.name)} TO {qn(new.name)}"
    schema_editor.execute(alter_sql(model, schema_editor, [*dropped, renamed]))
    others = [index["columns"] for name, index in indexes.items() if name not in (old.name, built.name)]
    kept = {*chain(*others), *_hidden_columns(new, model, schema_editor, indexed=True)}
    unused = [name for name in _hidden_columns(old, model, schema_editor) if name in columns and name not in kept]
    if unused:
        schema_editor.execute(alter_sql(model, schema_editor, [f"DROP COLUMN {qn(name)}" for name in unused]))


def _build_sql(
    index: models.Index, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, columns: Collection[str]
) -> list[Statement]:
    """MySQL/MariaDB: the statements that build ``index`` on a live table whose columns
    are ``columns``: a plain index in one, which the server builds in place without
    blocking writes; a hidden one as :meth:`HiddenParts.online_sql` makes it."""
    parts = _hidden_parts(index, model, schema_editor)
    return (
        [index.create_sql(model, schema_editor)] if parts is None else parts.online_sql(model, schema_editor, columns)
    )
