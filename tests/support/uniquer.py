"""An enqueuing process for the unique-jobs test: ``python -m tests.support.uniquer KEY COUNT commit|rollback``.

It sets Django up (``DJANGO_SETTINGS_MODULE`` and ``DB_NAME`` come from the parent),
says ``ready`` on stdout, waits for a line on stdin so that every process starts at
once, then enqueues a job with ``unique_key`` KEY COUNT times, each in a transaction of
its own that commits, or rolls back (a holder that vanishes: the others must not lose
the key to it). Last it prints one JSON line: how many of its enqueues wrote a job, and
the ids it got back."""

from __future__ import annotations

import json
import sys


class RolledBack(Exception):
    pass


def main(key: str, count: int, mode: str) -> None:
    import django

    django.setup()

    from django.db import OperationalError, connection, transaction

    from django_sqlqueue.db.engines.errors import is_transient
    from django_sqlqueue.models import Job

    connection.ensure_connection()
    print("ready", flush=True)
    sys.stdin.readline()

    created = deadlocks = 0
    ids = set()
    for _ in range(count):
        for _attempt in range(10):
            try:
                with transaction.atomic():
                    job = Job.objects.enqueue("tests.testapp.tasks.noop", unique_key=key)
                    if mode == "rollback":
                        raise RolledBack
            except RolledBack:
                break
            except OperationalError as error:
                # MySQL/MariaDB: picked as a deadlock's victim, the whole transaction was
                # rolled back (the README says so); the caller retries it, as any deadlock.
                if not is_transient(error):
                    raise
                deadlocks += 1
            else:
                created += bool(job.created)
                ids.add(job.pk)
                break
        else:
            raise AssertionError("ten deadlocks in a row")
    connection.close()
    print(json.dumps({"created": created, "ids": sorted(ids), "deadlocks": deadlocks}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
