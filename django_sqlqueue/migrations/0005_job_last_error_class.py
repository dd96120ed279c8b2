"""``Job.last_error_class``: the exception class of a job's last failed attempt, copied
out of its ``errors`` so that the admin's failures page groups by an index
(``sqlqueue_job_failed``) instead of reading the JSON of every failed row.

The column is filled for the jobs already in the table by one ``UPDATE`` that reads
each job's last error with the database's own JSON functions; finished successful jobs,
usually most of the table, are left out (the page never reads them). It takes seconds
per million rows that have errors, and holds their row locks until the migration
commits: run it when few jobs fail."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db.models.sql.compiler import SQLCompiler

import django_sqlqueue.db.indexes


class LastErrorClass(models.Func):
    """``errors[-1].exception_class_path``, read by the database (NULL when none)."""

    output_field = models.CharField()

    def __init__(self) -> None:
        super().__init__("errors")

    def as_postgresql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="LEFT(%(expressions)s -> -1 ->> 'exception_class_path', 255)")

    def as_mysql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        # A path built from the length, not '$[last]': MySQL 8.0 and MariaDB before 10.9 lack it.
        template = (
            "LEFT(JSON_UNQUOTE(JSON_EXTRACT(%(expressions)s,"
            " CONCAT('$[', JSON_LENGTH(%(expressions)s) - 1, '].exception_class_path'))), 255)"
        )
        return self.as_sql(compiler, connection, template=template)

    def as_sqlite(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        return self.as_sql(
            compiler,
            connection,
            template="substr(json_extract(%(expressions)s, '$[#-1].exception_class_path'), 1, 255)",
        )


def fill(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    job = apps.get_model("django_sqlqueue", "Job")
    jobs = job.objects.using(schema_editor.connection.alias).exclude(status="SUCCESSFUL").exclude(errors=[])
    jobs.update(last_error_class=models.functions.Coalesce(LastErrorClass(), models.Value("")))


class Migration(migrations.Migration):
    dependencies = [("django_sqlqueue", "0004_admin_permissions_and_indexes")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="last_error_class",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="The exception class of the last failed attempt; empty when none failed.",
                max_length=255,
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="job",
            index=django_sqlqueue.db.indexes.StatusIndex(
                status="FAILED",
                fields=["task", "last_error_class", "finished_at", "started_at", "attempts", "id"],
                name="sqlqueue_job_failed",
            ),
        ),
    ]
