"""Each worker's count of claim candidates another worker locked first: the contention
``sqlqueue_stats`` shows."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("django_sqlqueue", "0005_job_last_error_class")]

    operations = [
        migrations.AddField(
            model_name="worker",
            name="candidates_lost",
            field=models.PositiveBigIntegerField(
                default=0, help_text="Ready jobs its claims found locked by another worker first (MySQL/MariaDB only)."
            ),
        ),
    ]
