"""The failures index remade: on MySQL/MariaDB on hidden virtual columns that are NULL
unless a job is in a failure group, so claims and finishes of jobs that do not fail
leave it alone (it was led by status, and every claim and finish rewrote each job's
entry); on PostgreSQL and SQLite without the columns only MySQL's retrying jobs needed."""

from __future__ import annotations

from django.db import migrations

import django_sqlqueue.db.failures


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0017_job_unique_until_pruned"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="job",
            name="sqlqueue_job_failed",
        ),
        migrations.AddIndex(
            model_name="job",
            index=django_sqlqueue.db.failures.FailureIndex(name="sqlqueue_job_failed"),
        ),
    ]
