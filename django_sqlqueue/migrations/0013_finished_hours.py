"""The hours of finished jobs counted for the admin's 7-day chart (db/rollup.py)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0012_cancel_permission_label"),
    ]

    operations = [
        migrations.CreateModel(
            name="FinishedHour",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("hour", models.DateTimeField()),
                ("queue", models.CharField(blank=True, max_length=100)),
                ("succeeded", models.PositiveBigIntegerField()),
                ("failed", models.PositiveBigIntegerField()),
            ],
            options={
                "default_permissions": (),
                "constraints": [models.UniqueConstraint(fields=("hour", "queue"), name="sqlqueue_finishedhour_unique")],
            },
        ),
    ]
