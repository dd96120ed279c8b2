"""The paused queues (``pause_queue``), with the permissions to pause and resume them."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.clock


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0008_maintenance_leader"),
    ]

    operations = [
        migrations.CreateModel(
            name="PausedQueue",
            fields=[
                ("queue", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("reason", models.CharField(blank=True, default="", max_length=255)),
                ("paused_at", models.DateTimeField(db_default=django_sqlqueue.db.clock.DatabaseNow())),
            ],
            options={
                "ordering": ["queue"],
                "permissions": [("pause_queue", "Can pause queues"), ("resume_queue", "Can resume paused queues")],
                "default_permissions": (),
            },
        ),
    ]
