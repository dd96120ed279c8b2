"""The waiting jobs' index by queue leaves the claim and the finish alone on
MySQL/MariaDB too (``HiddenStatusIndex``, issue 41): there it was ``(status, queue)``,
rewritten by every claim and finish of every job, and is now an index on a hidden
``VIRTUAL`` column that holds the queue of a ``WAITING`` job and is NULL for the others.
On PostgreSQL and SQLite the index is the partial one it was, and this migration
changes nothing there.

On MariaDB the new column is added alone (instant), then the new index built beside the
old one in place, without blocking claims and finishes (it reads the table once:
seconds per million jobs), then the old index dropped and the new one renamed
(``ReplaceIndex``); the old index serves the admin's "waiting" filter and the count of
waiting jobs until then. If it is interrupted, run ``migrate`` again."""

from __future__ import annotations

from django.db import migrations

import django_sqlqueue.db.indexes
import django_sqlqueue.db.online_index


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0026_batches"),
    ]

    operations = [
        django_sqlqueue.db.online_index.ReplaceIndex(
            model_name="job",
            old=django_sqlqueue.db.indexes.StatusIndex(status="WAITING", fields=["queue"], name="sqlqueue_job_waiting"),
            new=django_sqlqueue.db.indexes.HiddenStatusIndex(
                status="WAITING", field="queue", name="sqlqueue_job_waiting"
            ),
        ),
    ]
