"""Jobs' tags in their side table (``JobTag``): written after the jobs they tag, in the
same transaction; read by ``Job.objects.tagged()`` through the ``(tag, job)`` index;
deleted with their jobs by the database's own ``ON DELETE CASCADE``, which
:func:`create_tag_table` declares on each database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from django.db.models import Q

if TYPE_CHECKING:
    from django.db.backends.base.schema import BaseDatabaseSchemaEditor
    from django.db.models import Model

    # The table, not the model: the model holds the manager, which calls this module.
    from django_sqlqueue.db.table import AbstractJob

#: The jobs' relation to their tags (``JobTag.job``'s ``related_name``).
TAGS = "tag_rows"
#: The name of the foreign key that deletes a job's tags with it.
CASCADE_NAME = "sqlqueue_jobtag_job_cascade"


def tag_model(job_model: type[AbstractJob]) -> type[Model]:
    """The side table of ``job_model``'s tags (``JobTag``), found through its relation."""
    return cast("type[Model]", job_model._meta.get_field(TAGS).related_model)


def write_tags(jobs: Sequence[AbstractJob], using: str) -> None:
    """Write the tags (``new_tags``) of the ``jobs`` just inserted (``created``), in one
    multi-row INSERT, in the caller's transaction."""
    model = tag_model(type(jobs[0]))
    rows = [model(job_id=job.pk, tag=tag) for job in jobs if job.created and job.new_tags for tag in job.new_tags]
    if rows:
        model._base_manager.using(using).bulk_create(rows)


def tagged(job_model: type[AbstractJob], tag: str) -> Q:
    """The jobs that have ``tag``: an ``IN`` over the ``(tag, job)`` index of the side
    table, which each database runs as a semi-join without reading the jobs table."""
    return Q(pk__in=tag_model(job_model)._base_manager.filter(tag=tag).values("job_id"))


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
