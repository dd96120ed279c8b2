"""Unique jobs: a job's ``unique_key``, and the index that lets only one active job hold it."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.indexes


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0015_rate_bucket"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="unique_key",
            field=models.CharField(
                blank=True,
                help_text="No other ready or running job has this key (see the README, Unique jobs).",
                max_length=255,
                null=True,
            ),
        ),
        migrations.AddConstraint(
            model_name="job",
            constraint=django_sqlqueue.db.indexes.ActiveKeyConstraint(name="sqlqueue_job_unique_key"),
        ),
    ]
