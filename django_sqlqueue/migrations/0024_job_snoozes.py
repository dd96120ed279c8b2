"""How many times a job's task snoozed (``raise Snooze``): a constant default, which
PostgreSQL and MariaDB add without rewriting the table."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0023_expiry_tags_meta"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="snoozes",
            field=models.PositiveIntegerField(
                db_default=0,
                default=0,
                help_text="Times its task snoozed (raise Snooze): each gave its attempt back, uncounted.",
            ),
        ),
    ]
