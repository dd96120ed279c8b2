"""``python -m tests.hosts.claim_loop MODE BATCH``: claim no-op jobs BATCH at a time and
finish them at once, until no job is ready on the primary; then print what it did as
JSON (``claimed``, ``lost`` candidates, ``empty`` claims).

MODE ``primary`` claims as workers do (``Job.objects.claim``). MODE ``replica`` reads the
candidates' ids on the ``replica`` database and locks, on the primary, those still
ready: the design's suggestion for sparing the primary, measured by
``tests/hosts/test_replica.py`` and not built into the queue (the README's "Scaling out"
says why)."""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any


def claim_from_replica(worker_id: str, batch: int) -> tuple[list[Any], int]:
    """The claimed jobs, and how many of the replica's candidates were gone."""
    from django.db import transaction
    from django.db.models import F

    from django_sqlqueue.db.clock import DatabaseNow
    from django_sqlqueue.models import Job, JobStatus

    on_replica = Job.objects.get_queryset().using("replica")
    ids = list(on_replica.ready().in_claim_order().values_list("pk", flat=True)[:batch])
    if not ids:
        return [], 0
    primary = Job.objects.on_queue_db()
    with transaction.atomic(using=primary.db):
        locking = primary.ready().filter(pk__in=ids).select_for_update(skip_locked=True)
        jobs = list(locking.annotate(claim_time=DatabaseNow()).order_by())
        if not jobs:
            return [], len(ids)
        started_at = jobs[0].claim_time
        primary.filter(pk__in=[job.pk for job in jobs]).update(
            status=JobStatus.RUNNING, worker=worker_id, started_at=started_at, attempts=F("attempts") + 1
        )
    for job in jobs:
        job.status, job.worker, job.started_at = JobStatus.RUNNING, worker_id, started_at
        job.attempts += 1
    return jobs, len(ids) - len(jobs)


def main() -> None:
    import django

    django.setup()
    from django_sqlqueue.models import Job

    mode, batch = sys.argv[1], int(sys.argv[2])
    worker_id = f"{socket.gethostname()}-{mode}-{os.getpid()}"
    claimed = lost = empty = 0
    while True:
        if mode == "replica":
            jobs, missed = claim_from_replica(worker_id, batch)
        else:
            jobs = Job.objects.claim(worker_id=worker_id, limit=batch)
            missed = jobs.lost
        lost += missed
        if jobs:
            claimed += Job.objects.finish(worker_id=worker_id, succeeded=dict.fromkeys(jobs))
        elif not Job.objects.on_queue_db().ready().exists():
            break
        else:
            empty += 1  # the replica showed none, or only gone ones: the primary still has some
    print(json.dumps({"claimed": claimed, "lost": lost, "empty": empty}))


if __name__ == "__main__":
    main()
