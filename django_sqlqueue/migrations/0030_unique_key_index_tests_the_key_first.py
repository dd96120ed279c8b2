"""The active jobs' unique-key index tests ``unique_key IS NOT NULL`` first (issue 39's
plain-job cost on SQLite): SQLite evaluates a partial index's condition on every UPDATE
of a column it names, and since 0022 added ``WAITING`` its ``status IN (…)`` of three
values built a temporary table for each claimed and finished row, keyless or not (27%
more of SQLite's work per job). A keyless job now stops at the key's test.

Only SQLite's index is remade (in the migration's transaction, which SQLite's file lock
keeps writers out of); on PostgreSQL the stored condition says the same and the index is
left as it is, and MySQL/MariaDB's stand-in is a hidden column, not a partial index."""

from __future__ import annotations

from django.db import migrations

import django_sqlqueue.db.sqlite_constraint


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0029_finished_indexes_hidden"),
    ]

    operations = [
        django_sqlqueue.db.sqlite_constraint.RemakeSQLiteConstraint(model_name="job", name="sqlqueue_job_unique_key"),
    ]
