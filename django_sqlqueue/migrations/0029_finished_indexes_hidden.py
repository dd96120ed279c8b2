"""The admin's indexes by queue and status and by finish time leave the claim and the
finish alone on MySQL/MariaDB too (``HiddenFinishedIndex``, issue 41): there they were
``(queue, status)`` and ``(finished_at, status)``, whose entries every claim, retry,
release and finish rewrote, and now hold a hidden ``VIRTUAL`` column in place of
``status``, the status of a finished job and NULL before it finishes, so a job's
entries are rewritten once, by its finish. On PostgreSQL (where 0025 made them partial)
and SQLite the indexes are the ones they were, and this migration changes nothing there.

On MariaDB the first replacement adds the hidden column alone (instant); each new index
is then built beside the old one in place, without blocking claims and finishes
(reading the table once), and swapped in by one ``ALTER TABLE`` that drops the old one
and renames the new (``ReplaceIndex``): the old indexes serve the overview's exact
counts, the charts' hours and pruning until then. (Adding the column in the index's
``ALTER TABLE``, as this migration first did, held a shared lock for the build: 17 s
for both at 1,000,000 jobs at a load average of 3, 62 s at 8.) If it is interrupted,
run ``migrate`` again."""

from __future__ import annotations

from django.db import migrations, models

import django_sqlqueue.db.indexes
import django_sqlqueue.db.online_index


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0028_claim_indexes_hold_expiry"),
    ]

    operations = [
        django_sqlqueue.db.online_index.ReplaceIndex(
            model_name="job",
            old=django_sqlqueue.db.indexes.FinishedIndex(
                fields=["queue", "status"],
                name="sqlqueue_job_queue_status",
                over=models.Q(("status__in", ["SUCCESSFUL", "FAILED", "CANCELLED"])),
            ),
            new=django_sqlqueue.db.indexes.HiddenFinishedIndex(
                fields=["queue", "status"],
                name="sqlqueue_job_queue_status",
                over=models.Q(("status__in", ["SUCCESSFUL", "FAILED", "CANCELLED"])),
                adds_column=True,
            ),
        ),
        django_sqlqueue.db.online_index.ReplaceIndex(
            model_name="job",
            old=django_sqlqueue.db.indexes.FinishedIndex(
                fields=["finished_at", "status"],
                name="sqlqueue_job_finished",
                over=models.Q(("finished_at__isnull", False)),
            ),
            new=django_sqlqueue.db.indexes.HiddenFinishedIndex(
                fields=["finished_at", "status"],
                name="sqlqueue_job_finished",
                over=models.Q(("finished_at__isnull", False)),
            ),
        ),
    ]
