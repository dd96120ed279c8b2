"""Wake idle workers on PostgreSQL the moment new jobs commit.

A statement-level trigger sends one ``NOTIFY sqlqueue`` per INSERT statement (one per
``enqueue``, one per batch of ``enqueue_many``). PostgreSQL delivers notifications only
when the transaction commits, so a worker never wakes for a job it cannot see yet,
and the enqueue costs no extra round trip. Other databases poll."""

from __future__ import annotations

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

CHANNEL = "sqlqueue"


def create_trigger(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    table = schema_editor.quote_name(apps.get_model("django_sqlqueue", "Job")._meta.db_table)
    schema_editor.execute(
        "CREATE OR REPLACE FUNCTION sqlqueue_job_notify() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN PERFORM pg_notify('{CHANNEL}', ''); RETURN NULL; END $$"
    )
    schema_editor.execute(
        f"CREATE TRIGGER sqlqueue_job_notify AFTER INSERT ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION sqlqueue_job_notify()"
    )


def drop_trigger(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    table = schema_editor.quote_name(apps.get_model("django_sqlqueue", "Job")._meta.db_table)
    schema_editor.execute(f"DROP TRIGGER IF EXISTS sqlqueue_job_notify ON {table}")
    schema_editor.execute("DROP FUNCTION IF EXISTS sqlqueue_job_notify()")


class Migration(migrations.Migration):
    dependencies = [("django_sqlqueue", "0002_postgres_autovacuum")]

    operations = [migrations.RunPython(create_trigger, drop_trigger, elidable=False)]
