"""Batches (``Job.objects.batch()``): the ``JobBatch`` table and each job's ``batch_id``,
indexed with its status for the jobs of a batch (partial where the database allows)."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.clock
import django_sqlqueue.db.indexes


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0025_partial_admin_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="JobBatch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("description", models.CharField(blank=True, default="", max_length=255)),
                (
                    "callbacks",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="on_success, on_failure, on_finish: each a task with its arguments.",
                    ),
                ),
                (
                    "total",
                    models.PositiveIntegerField(
                        default=0, help_text="The jobs enqueued in it, those added later among them."
                    ),
                ),
                (
                    "pending",
                    models.IntegerField(default=0, help_text="Its jobs whose finish has not counted down yet."),
                ),
                (
                    "succeeded_unkept",
                    models.PositiveIntegerField(
                        default=0, help_text="Its jobs that succeeded and were not kept (SQLQUEUE_RETENTION)."
                    ),
                ),
                ("created_at", models.DateTimeField(db_default=django_sqlqueue.db.clock.DatabaseNow())),
                ("finished_at", models.DateTimeField(blank=True, help_text="When its last job finished.", null=True)),
                (
                    "succeeded",
                    models.PositiveIntegerField(blank=True, help_text="Counted when it finished.", null=True),
                ),
                (
                    "failed",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Failed, cancelled, expired or deleted jobs, counted when it finished.",
                        null=True,
                    ),
                ),
                (
                    "callback_jobs",
                    models.JSONField(
                        blank=True, default=dict, help_text="The id of each callback enqueued, or why it could not be."
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "job batches",
                "default_permissions": ("view",),
            },
        ),
        migrations.AddField(
            model_name="job",
            name="batch_id",
            field=models.BigIntegerField(
                blank=True, help_text="The batch it belongs to (Job.objects.batch()), by id.", null=True
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=django_sqlqueue.db.indexes.KeyedIndex(fields=["batch_id", "status"], name="sqlqueue_job_batch"),
        ),
        migrations.AddIndex(
            model_name="jobbatch",
            index=models.Index(fields=["finished_at"], name="sqlqueue_batch_finished"),
        ),
    ]
