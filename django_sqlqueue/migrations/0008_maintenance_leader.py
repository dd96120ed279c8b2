"""The maintenance lease: which runworkers supervisor rescues, ticks schedules and prunes."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.clock


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0007_schedule"),
    ]

    operations = [
        migrations.CreateModel(
            name="Leader",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("role", models.CharField(max_length=50, unique=True)),
                (
                    "holder",
                    models.CharField(help_text="The supervisor: host:pid, after --name-prefix.", max_length=255),
                ),
                (
                    "acquired_at",
                    models.DateTimeField(
                        db_default=django_sqlqueue.db.clock.DatabaseNow(), help_text="When this holder took it."
                    ),
                ),
                ("expires_at", models.DateTimeField()),
            ],
        ),
    ]
