"""Unique jobs held until pruned: a job may keep its ``unique_key`` after it ends, and the
unique index (remade) counts such jobs as holders too."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.indexes


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0016_job_unique_key"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="job",
            name="sqlqueue_job_unique_key",
        ),
        migrations.AddField(
            model_name="job",
            name="unique_until_pruned",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text="It keeps its unique key after it ends, until it is pruned.",
            ),
        ),
        migrations.AddConstraint(
            model_name="job",
            constraint=django_sqlqueue.db.indexes.ActiveKeyConstraint(kept=True, name="sqlqueue_job_unique_key"),
        ),
    ]
