"""Expiry, tags and meta (issue 40): a job's ``expires_at`` (with the partial index the
expiry sweep reads) and ``end_reason``, its free ``meta`` JSON, and its tags in a side
table whose foreign key deletes them with their job (``db/tagging.py``)."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models

import django_sqlqueue.db.indexes
import django_sqlqueue.db.tagging


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0022_workflows"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="end_reason",
            field=models.CharField(
                blank=True,
                choices=[("expired", "expired")],
                db_default="",
                default="",
                help_text="Why it ended so, where its status does not say: expired (not started by its expires_at).",
                max_length=32,
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="expires_at",
            field=models.DateTimeField(
                blank=True,
                help_text="Never started from this time on (the database's clock); empty for never.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="meta",
            field=models.JSONField(
                blank=True,
                default=dict,
                null=True,
                help_text="Free JSON of the caller's and the task's own (current_job().add_meta).",
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=django_sqlqueue.db.indexes.ExpiringIndex(name="sqlqueue_job_expiring"),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="JobTag",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("tag", models.CharField(max_length=64)),
                        (
                            "job",
                            models.ForeignKey(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="tag_rows",
                                to="django_sqlqueue.job",
                            ),
                        ),
                    ],
                    options={
                        "default_permissions": (),
                        "constraints": [
                            models.UniqueConstraint(fields=("tag", "job"), name="sqlqueue_jobtag_tag_job"),
                        ],
                    },
                ),
            ],
            # The table is made below, with the foreign key Django cannot declare.
            database_operations=[],
        ),
        migrations.RunPython(
            django_sqlqueue.db.tagging.create_tag_table,
            django_sqlqueue.db.tagging.delete_tag_table,
            # DDL: MariaDB cannot roll it back, and refuses it inside a transaction.
            atomic=False,
        ),
    ]
