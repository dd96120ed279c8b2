"""The demo's producer and consumer processes. Nothing Django at import: each process
is a fresh interpreter that sets Django up itself."""

from __future__ import annotations

import random
import string
import time
from typing import Any

QUEUE = "demo"


def produce(count: int, done: Any) -> None:
    """Insert ``count`` jobs in random order, committing every ten."""
    import django

    django.setup()
    from django.db import transaction

    from django_sqlqueue.models import Job
    from testproject.demo.tasks import process_payload

    def payload() -> str:
        return "".join(random.choices(string.ascii_lowercase, k=64))

    for start in range(0, count, 10):
        with transaction.atomic():
            for _ in range(min(10, count - start)):
                Job.objects.enqueue(process_payload, kwargs={"d": payload(), "e": payload()}, queue=QUEUE)
    with done.get_lock():
        done.value += 1


def consume(number: int, producers: int, producers_done: Any, lost: Any, log: Any) -> None:
    """Claim batches whose ``d`` starts with a random letter until the producers are done
    and nothing is left; each batch is reported on ``log`` as the article's run log did."""
    import django

    django.setup()
    from django.db.models import Q

    from django_sqlqueue.models import Job
    from django_sqlqueue.rules.registry import get_task

    name = f"consumer {number}"
    while True:
        letter = random.choice(string.ascii_lowercase)
        batch = Job.objects.claim(worker_id=name, queues=[QUEUE], limit=100, filter=Q(kwargs__d__startswith=letter))
        with lost.get_lock():
            lost.value += batch.lost
        if batch:
            ids = [job.pk for job in batch]
            shown = f"{ids[:12]}"[:-1] + (", …]" if len(ids) > 12 else "]")
            log.put(f"{name} #records = {len(batch)} - {shown}")
            results = {job: get_task(job.task).func(*job.args, **job.kwargs) for job in batch}
            Job.objects.finish(worker_id=name, succeeded=results)
        elif producers_done.value == producers and not Job.objects.ready().filter(queue=QUEUE).exists():
            return
        else:
            time.sleep(0.02)
