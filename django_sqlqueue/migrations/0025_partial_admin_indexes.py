"""The admin's indexes by queue and status and by finish time hold finished jobs only
on PostgreSQL (``FinishedIndex``, issue 41), so a claim, a retry or a release writes no
entry in them. On SQLite and MySQL/MariaDB the indexes stay as they were, and this
migration changes nothing there.

Safe on a live system: on PostgreSQL each index is built beside the old one with
``CREATE INDEX CONCURRENTLY`` (writers go on; it reads the table twice, a few seconds
per million jobs), then the old one is dropped concurrently and the new one renamed
(``ReplaceIndex``). The queries go on being served by the old index until the new one
takes its name. Not atomic, as ``CONCURRENTLY`` demands: if it is interrupted, run
``migrate`` again; it drops the unfinished index and builds it anew."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.indexes
import django_sqlqueue.db.online_index


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("django_sqlqueue", "0024_job_snoozes"),
    ]

    operations = [
        django_sqlqueue.db.online_index.ReplaceIndex(
            model_name="job",
            old=models.Index(fields=["queue", "status"], name="sqlqueue_job_queue_status"),
            new=django_sqlqueue.db.indexes.FinishedIndex(
                fields=["queue", "status"],
                name="sqlqueue_job_queue_status",
                over=models.Q(("status__in", ["SUCCESSFUL", "FAILED", "CANCELLED"])),
            ),
        ),
        django_sqlqueue.db.online_index.ReplaceIndex(
            model_name="job",
            old=models.Index(fields=["finished_at", "status"], name="sqlqueue_job_finished"),
            new=django_sqlqueue.db.indexes.FinishedIndex(
                fields=["finished_at", "status"],
                name="sqlqueue_job_finished",
                over=models.Q(("finished_at__isnull", False)),
            ),
        ),
    ]
