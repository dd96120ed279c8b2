"""The names the queue matches on compare byte for byte on MySQL/MariaDB too: queue
names, worker and supervisor names, concurrency, unique and rate-limit keys, schedule
names (``NameField``, ``db/names.py``).

Under the usual case- and accent-insensitive collations ``--queues reports`` claimed
the jobs of ``Reports``, ``REPORTS``, ``reports `` and ``répörts`` too. On MySQL/MariaDB
each column is remade with a binary utf8mb4 collation that does not pad; on PostgreSQL
and SQLite, which compare exactly already, nothing is done (SQLite would otherwise copy
each table to change its fields' class).

On MySQL/MariaDB each column's change rebuilds its table: four rebuilds of the jobs
table, which block writes to it while they run: 14 s for a million jobs on MariaDB
10.11 on our test machine. Prune the table first, or run it when few jobs are enqueued."""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import ProjectState

import django_sqlqueue.db.names


class AlterFieldOnMySQL(migrations.AlterField):
    """``AlterField``, whose database change is made on MySQL/MariaDB only."""

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        if schema_editor.connection.vendor == "mysql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        if schema_editor.connection.vendor == "mysql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


#: Each model's name columns, with their fields' options as they were.
NAME_FIELDS: dict[tuple[str, str], dict[str, Any]] = {
    ("job", "queue"): {"max_length": 100},
    ("job", "worker"): {"blank": True, "help_text": "The worker that holds or last held the job.", "max_length": 255},
    ("job", "concurrency_key"): {"blank": True, "max_length": 255, "null": True},
    ("job", "unique_key"): {
        "blank": True,
        "help_text": "No other ready or running job has this key (see the README, Unique jobs).",
        "max_length": 255,
        "null": True,
    },
    ("worker", "name"): {"max_length": 255, "unique": True},
    ("schedule", "key"): {"help_text": "The entry's name in SQLQUEUE_SCHEDULE.", "max_length": 200, "unique": True},
    ("schedule", "queue"): {
        "blank": True,
        "default": "",
        "help_text": "Empty for the task's own queue.",
        "max_length": 100,
    },
    ("leader", "role"): {"max_length": 50, "unique": True},
    ("leader", "holder"): {"help_text": "The supervisor: host:pid, after --name-prefix.", "max_length": 255},
    ("pausedqueue", "queue"): {"max_length": 100, "primary_key": True, "serialize": False},
    ("finishedhour", "queue"): {"blank": True, "max_length": 100},
    ("concurrencykey", "key"): {"max_length": 255, "primary_key": True, "serialize": False},
    ("ratebucket", "name"): {"max_length": 100, "primary_key": True, "serialize": False},
}


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0018_job_failure_index"),
    ]

    operations = [
        AlterFieldOnMySQL(model_name=model, name=name, field=django_sqlqueue.db.names.NameField(**options))
        for (model, name), options in NAME_FIELDS.items()
    ]
