"""The tags' side table (``JobTag``) as the migrations make it: with a foreign key to the
jobs table that deletes a job's tags with it, declared on each database in its own way."""

from __future__ import annotations

from typing import Any

from django.db.backends.base.schema import BaseDatabaseSchemaEditor

#: The name of the foreign key that deletes a job's tags with it.
CASCADE_NAME = "sqlqueue_jobtag_job_cascade"


def create_tag_table(apps: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Create ``JobTag``'s table with a foreign key to the jobs table that deletes a
    job's tags with it (``ON DELETE CASCADE``), which Django cannot declare before 6.1.

    SQLite cannot add a foreign key to a table: there it goes into the ``CREATE TABLE``,
    on the ``job_id`` column (SQLite enforces it: Django turns ``foreign_keys`` on for
    every connection). PostgreSQL and MariaDB add it after."""
    model = apps.get_model("django_sqlqueue", "JobTag")
    job_table = apps.get_model("django_sqlqueue", "Job")._meta.db_table
    qn = schema_editor.quote_name
    references = f"REFERENCES {qn(job_table)} ({qn('id')}) ON DELETE CASCADE"
    if schema_editor.connection.vendor != "sqlite":
        schema_editor.create_model(model)
        schema_editor.execute(
            f"ALTER TABLE {qn(model._meta.db_table)} ADD CONSTRAINT {qn(CASCADE_NAME)} "
            f"FOREIGN KEY ({qn('job_id')}) {references}"
        )
        return
    sql, params = schema_editor.table_sql(model)
    column = f"{qn('job_id')} bigint NOT NULL"
    if column not in sql:
        raise AssertionError(f"No {column} in {sql}")
    schema_editor.execute(sql.replace(column, f"{column} {references}"), params or None)
    # What create_model() adds after its CREATE TABLE: the foreign key's index.
    schema_editor.deferred_sql.extend(schema_editor._model_indexes_sql(model))  # type: ignore[attr-defined]


def delete_tag_table(apps: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Undo :func:`create_tag_table`: the table goes, its foreign key with it."""
    schema_editor.delete_model(apps.get_model("django_sqlqueue", "JobTag"))
