"""The cancel request of a running job (``Job.objects.cancel``), read by its worker's heartbeat."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0009_paused_queues"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="cancel_requested_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When someone asked to cancel the job while it ran (the database's clock).",
                null=True,
            ),
        ),
    ]
