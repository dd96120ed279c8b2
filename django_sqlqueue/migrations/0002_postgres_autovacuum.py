"""Vacuum the jobs table often on PostgreSQL.

Every claim and every finish rewrites a row, leaving a dead tuple behind; with the
default thresholds (20% of the table) a busy queue over a large table of finished
jobs piles up millions of them, and the claim's index scans wade through them. Other
databases clean up in place and need nothing."""

from __future__ import annotations

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

AUTOVACUUM = (
    "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, "
    "autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02"
)
RESET = (
    "autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, "
    "autovacuum_vacuum_cost_delay, autovacuum_analyze_scale_factor"
)


def _alter_table(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor, clause: str) -> None:
    if schema_editor.connection.vendor == "postgresql":
        table = schema_editor.quote_name(apps.get_model("django_sqlqueue", "Job")._meta.db_table)
        schema_editor.execute(f"ALTER TABLE {table} {clause}")


def tune(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _alter_table(apps, schema_editor, f"SET ({AUTOVACUUM})")


def untune(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _alter_table(apps, schema_editor, f"RESET ({RESET})")


class Migration(migrations.Migration):
    dependencies = [("django_sqlqueue", "0001_initial")]

    operations = [migrations.RunPython(tune, untune, elidable=False)]
