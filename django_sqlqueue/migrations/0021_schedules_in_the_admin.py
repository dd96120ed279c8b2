"""Recurring jobs defined in the admin beside SQLQUEUE_SCHEDULE's: where each is defined
(the existing rows are the settings'), its last jobs, and the revision a tick's
compare-and-set reads so that an edit made during a tick cannot be overwritten by it.
The other changes are help texts and the form's default for ``missed``."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.names


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0020_unique_key_help_text"),
    ]

    operations = [
        migrations.AddField(
            model_name="schedule",
            name="defined_in",
            field=models.CharField(
                choices=[("settings", "settings"), ("admin", "admin")],
                default="settings",
                editable=False,
                help_text="SQLQUEUE_SCHEDULE (read-only in the admin) or the admin.",
                max_length=8,
            ),
        ),
        migrations.AddField(
            model_name="schedule",
            name="recent_jobs",
            field=models.JSONField(
                blank=True, default=list, editable=False, help_text="Its last jobs' ids, newest first."
            ),
        ),
        migrations.AddField(
            model_name="schedule",
            name="revision",
            field=models.PositiveIntegerField(
                default=0, editable=False, help_text="Moves on at every write but a tick's (see the class)."
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="cron",
            field=models.CharField(
                blank=True, default="", help_text="Five fields, such as 0 3 * * * (03:00 every day).", max_length=255
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="every",
            field=models.FloatField(blank=True, help_text="Seconds between ticks, instead of cron.", null=True),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="key",
            field=django_sqlqueue.db.names.NameField(
                help_text="Its name: its key in SQLQUEUE_SCHEDULE, or the one given in the admin.",
                max_length=200,
                unique=True,
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="missed",
            field=models.CharField(
                choices=[("skip", "skip"), ("latest", "latest"), ("all", "all")],
                default="latest",
                help_text="The ticks that passed while no supervisor ran: enqueue the latest, none, or all.",
                max_length=6,
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="tz",
            field=models.CharField(
                help_text="Such as Europe/Paris: cron's times are its.", max_length=64, verbose_name="time zone"
            ),
        ),
    ]
