"""The cancel permission's label says what Cancel does now: ready jobs at once, running
ones by request (it said "ready jobs" before running jobs could be cancelled)."""

from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0011_job_progress"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="job",
            options={
                "permissions": [
                    ("retry_job", "Can retry failed or cancelled jobs"),
                    ("cancel_job", "Can cancel jobs (ready ones at once, running ones by request)"),
                    ("run_job_now", "Can run scheduled jobs now"),
                ]
            },
        ),
    ]
