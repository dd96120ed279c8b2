"""The permissions to edit a job no worker holds (``edit_job``) and to enqueue one of a
registered task (``enqueue_job``) from the admin. Only the model's options change: no
statement runs on the jobs table; ``migrate`` creates the two permissions' rows."""

from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0002_job_insert_token"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="job",
            options={
                "permissions": [
                    ("retry_job", "Can retry failed or cancelled jobs"),
                    ("cancel_job", "Can cancel jobs (ready ones at once, running ones by request)"),
                    ("run_job_now", "Can run scheduled jobs now"),
                    (
                        "edit_job",
                        "Can edit the arguments, queue, priority, run time and attempts of jobs no worker holds",
                    ),
                    ("enqueue_job", "Can enqueue jobs of registered tasks from the admin"),
                ]
            },
        ),
    ]
