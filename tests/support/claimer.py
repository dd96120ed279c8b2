"""A claiming process for the concurrency tests: ``python -m tests.support.claimer WORKER_ID LIMIT``.

It sets Django up (``DJANGO_SETTINGS_MODULE`` and ``DB_NAME`` come from the parent),
says ``ready`` on stdout, waits for a line on stdin so that every claimer starts at
once, then claims batches of ``LIMIT`` and finishes each as a success until the queue
is empty. Last it prints one JSON line: every id it claimed, the number of claims, and
the candidates it lost to other claimers."""

from __future__ import annotations

import json
import sys


def main(worker_id: str, limit: int) -> None:
    import django

    django.setup()

    from django.db import connection

    from django_sqlqueue.models import Job

    connection.ensure_connection()
    print("ready", flush=True)
    sys.stdin.readline()

    claimed_ids: list[int] = []
    claims = lost = 0
    while True:
        claimed = Job.objects.claim(worker_id=worker_id, limit=limit)
        claims += 1
        lost += claimed.lost
        # On MySQL an empty claim may only mean others locked every candidate first.
        if not claimed and not claimed.lost:
            break
        claimed_ids.extend(job.pk for job in claimed)
        if claimed:
            written = Job.objects.finish(worker_id=worker_id, succeeded=dict.fromkeys(claimed, worker_id))
            assert written == len(claimed), f"finished {written} of {len(claimed)} claimed jobs"
    connection.close()
    print(json.dumps({"ids": claimed_ids, "claims": claims, "lost": lost}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
