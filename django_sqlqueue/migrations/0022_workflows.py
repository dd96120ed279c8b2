"""Workflows: a job may wait for others (``WAITING``, its count of unfinished ones and
whether it runs after a failure), linked to them in ``JobDependency``; a waiting job
holds its unique key like the other active ones, so the unique index is remade."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models

import django_sqlqueue.db.indexes

STATUSES = ["WAITING", "READY", "RUNNING", "SUCCESSFUL", "FAILED", "CANCELLED"]


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0021_schedules_in_the_admin"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="job", name="sqlqueue_job_status_valid"),
        migrations.RemoveConstraint(model_name="job", name="sqlqueue_job_unique_key"),
        migrations.AlterField(
            model_name="job",
            name="status",
            field=models.CharField(
                choices=[(status, status.capitalize()) for status in STATUSES], default="READY", max_length=10
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="runs_after_failure",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text='after_failure="run": it runs even when a job it waits for failed or was cancelled.',
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="waiting_for",
            field=models.PositiveIntegerField(
                db_default=0, default=0, help_text="How many of the jobs it was enqueued after have not finished."
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=django_sqlqueue.db.indexes.StatusIndex(
                fields=["queue"], name="sqlqueue_job_waiting", status="WAITING"
            ),
        ),
        migrations.AddConstraint(
            model_name="job",
            constraint=models.CheckConstraint(
                condition=models.Q(("status__in", STATUSES)), name="sqlqueue_job_status_valid"
            ),
        ),
        migrations.AddConstraint(
            model_name="job",
            constraint=django_sqlqueue.db.indexes.ActiveKeyConstraint(kept=True, name="sqlqueue_job_unique_key"),
        ),
        migrations.CreateModel(
            name="JobDependency",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "settled",
                    models.BooleanField(default=False, help_text="The parent has finished and the child counted it."),
                ),
                (
                    "child",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="dependencies",
                        to="django_sqlqueue.job",
                    ),
                ),
                (
                    "parent",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="dependents",
                        to="django_sqlqueue.job",
                    ),
                ),
            ],
            options={
                "default_permissions": (),
                "indexes": [models.Index(fields=["settled", "parent"], name="sqlqueue_dependency_unsettled")],
                "constraints": [models.UniqueConstraint(fields=("child", "parent"), name="sqlqueue_dependency_unique")],
            },
        ),
    ]
