"""Recurring jobs: one row per SQLQUEUE_SCHEDULE entry, advanced tick by tick, and the
admin permissions to enable, disable and run them now."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0006_worker_candidates_lost"),
    ]

    operations = [
        migrations.CreateModel(
            name="Schedule",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "key",
                    models.CharField(help_text="The entry's name in SQLQUEUE_SCHEDULE.", max_length=200, unique=True),
                ),
                ("task", models.CharField(max_length=255)),
                ("expression", models.CharField(help_text="A cron expression, or every N seconds.", max_length=255)),
                ("cron", models.CharField(blank=True, default="", max_length=255)),
                (
                    "every",
                    models.FloatField(blank=True, help_text="Seconds between ticks, for an every entry.", null=True),
                ),
                ("tz", models.CharField(max_length=64, verbose_name="time zone")),
                ("args", models.JSONField(blank=True, default=list)),
                ("kwargs", models.JSONField(blank=True, default=dict)),
                (
                    "queue",
                    models.CharField(
                        blank=True, default="", help_text="Empty for the task's own queue.", max_length=100
                    ),
                ),
                ("priority", models.SmallIntegerField(blank=True, null=True)),
                (
                    "missed",
                    models.CharField(choices=[("skip", "skip"), ("latest", "latest"), ("all", "all")], max_length=6),
                ),
                ("enabled", models.BooleanField(default=True)),
                (
                    "last_tick_at",
                    models.DateTimeField(help_text="Every tick up to this time is done (enqueued or skipped)."),
                ),
                ("next_tick_at", models.DateTimeField(blank=True, help_text="When it is next due.", null=True)),
                (
                    "last_run_at",
                    models.DateTimeField(blank=True, help_text="The tick of the last job it enqueued.", null=True),
                ),
                ("last_job_id", models.BigIntegerField(blank=True, null=True)),
            ],
            options={
                "permissions": [
                    ("enable_schedule", "Can enable and disable schedules"),
                    ("run_schedule_now", "Can run scheduled entries now"),
                ],
                "indexes": [models.Index(fields=["enabled", "next_tick_at"], name="sqlqueue_schedule_due")],
            },
        ),
    ]
