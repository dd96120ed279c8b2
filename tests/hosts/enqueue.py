"""``python -m tests.hosts.enqueue TASK COUNT [ARGS_JSON]``: enqueue ``COUNT`` jobs of a
registered task, with the settings' database (the suite points it at its own server)."""

from __future__ import annotations

import json
import sys

import django


def main() -> None:
    django.setup()
    from django_sqlqueue.models import Job

    task, count = sys.argv[1], int(sys.argv[2])
    args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else []
    chunk = 5000
    for start in range(0, count, chunk):
        Job.objects.enqueue_many(Job.objects.build(task, args) for _ in range(min(chunk, count - start)))


if __name__ == "__main__":
    main()
