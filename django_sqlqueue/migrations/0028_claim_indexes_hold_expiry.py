"""The claim's indexes hold each ready job's ``expires_at`` too, after its claim order,
so that the claim reads its candidates from the index alone again (issue 41).

Expiry (0023) put ``expires_at IS NULL OR expires_at > now`` in the claim's condition,
and the claim then read each candidate's row for it: on MariaDB the candidates' read
lost "Using index" (one row lookup per candidate, each claim), and SQLite its covering
index. The order of the indexes is unchanged (``id`` is unique before the new column).

Safe on a live system: on PostgreSQL each index is built beside the old one with
``CREATE INDEX CONCURRENTLY`` (claims go on with the old one), then swapped in
(``ReplaceIndex``); MariaDB builds each beside the old one in place (online DDL), and
swaps it in the same way. Not atomic, as
``CONCURRENTLY`` demands: if it is interrupted, run ``migrate`` again."""

from __future__ import annotations

from django.db import migrations

import django_sqlqueue.db.indexes
import django_sqlqueue.db.online_index


def ready_index(fields: list[str], name: str) -> django_sqlqueue.db.indexes.StatusIndex:
    return django_sqlqueue.db.indexes.StatusIndex(status="READY", fields=fields, name=name)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("django_sqlqueue", "0027_waiting_index_hidden"),
    ]

    operations = [
        django_sqlqueue.db.online_index.ReplaceIndex(
            model_name="job",
            old=ready_index(["-priority", "run_at", "id"], "sqlqueue_job_ready"),
            new=ready_index(["-priority", "run_at", "id", "expires_at"], "sqlqueue_job_ready"),
        ),
        django_sqlqueue.db.online_index.ReplaceIndex(
            model_name="job",
            old=ready_index(["queue", "-priority", "run_at", "id"], "sqlqueue_job_ready_queue"),
            new=ready_index(["queue", "-priority", "run_at", "id", "expires_at"], "sqlqueue_job_ready_queue"),
        ),
    ]
