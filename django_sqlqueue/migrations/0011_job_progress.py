"""A running task's last progress report (``current_job().report_progress``)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0010_job_cancel_requested"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="progress",
            field=models.JSONField(
                blank=True, help_text='The last progress its task reported: {"done", "total", "message"}.', null=True
            ),
        ),
    ]
