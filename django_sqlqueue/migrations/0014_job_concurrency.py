"""Concurrency limits: a job's key and limit, the index the claim counts them with,
and the table of key rows the claim locks."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.indexes


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0013_finished_hours"),
    ]

    operations = [
        migrations.CreateModel(
            name="ConcurrencyKey",
            fields=[("key", models.CharField(max_length=255, primary_key=True, serialize=False))],
            options={"default_permissions": ()},
        ),
        migrations.AddField(
            model_name="job",
            name="concurrency_key",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="concurrency_limit",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="job",
            index=django_sqlqueue.db.indexes.KeyedIndex(
                fields=["concurrency_key", "status"], name="sqlqueue_job_concurrency"
            ),
        ),
        migrations.AddConstraint(
            model_name="job",
            constraint=models.CheckConstraint(
                condition=models.Q(("concurrency_key__isnull", True), ("concurrency_limit__isnull", True))
                | models.Q(("concurrency_key__isnull", False), ("concurrency_limit__gte", 1)),
                name="sqlqueue_job_concurrency_pair",
            ),
        ),
    ]
