"""The admin's permissions (retry, cancel, run now) and the indexes its filters and
queue overview read. Plain indexes over every row, the same on every database: the
admin looks at finished jobs too, so a partial index (``StatusIndex``) would not serve it."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("django_sqlqueue", "0003_postgres_notify")]

    operations = [
        migrations.AlterModelOptions(
            name="job",
            options={
                "permissions": [
                    ("retry_job", "Can retry failed or cancelled jobs"),
                    ("cancel_job", "Can cancel ready jobs"),
                    ("run_job_now", "Can run scheduled jobs now"),
                ]
            },
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["queue", "status"], name="sqlqueue_job_queue_status"),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["finished_at", "status"], name="sqlqueue_job_finished"),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["enqueued_at"], name="sqlqueue_job_enqueued"),
        ),
    ]
