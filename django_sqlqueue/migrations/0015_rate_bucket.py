"""Rate limits: a token bucket row per SQLQUEUE_RATE_LIMITS entry, which claims lock."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.clock


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0014_job_concurrency"),
    ]

    operations = [
        migrations.CreateModel(
            name="RateBucket",
            fields=[
                ("name", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("tokens", models.FloatField()),
                ("updated_at", models.DateTimeField(db_default=django_sqlqueue.db.clock.DatabaseNow())),
            ],
            options={"default_permissions": ()},
        ),
    ]
