"""Giving back the jobs of workers that died: nothing stays ``RUNNING`` forever."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Collection, Mapping

from django.db import transaction

from django_sqlqueue.conf import conf
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.exceptions import WorkerLost
from django_sqlqueue.models import Job, JobStatus, Worker

logger = logging.getLogger(__name__)


def rescue_worker(
    name: str,
    error: BaseException,
    *,
    started: Collection[int] | None = None,
    errors: Mapping[int, BaseException] | None = None,
) -> int:
    """Give back every job ``name`` holds: a failed attempt is recorded on the jobs that
    had started (all of them when ``started`` is None, as nobody knows) — ``errors[id]``
    or else ``error`` — and the others go back to ``READY`` with their attempt not
    counted. Returns the count.

    Only for a worker known to be dead (its process exited, or its lease expired), or
    for a live one that runs none of its jobs, with ``started`` empty: a worker whose
    claim's answer was lost with its connection gives back what the claim took."""
    held = list(Job.objects.on_queue_db().filter(status=JobStatus.RUNNING, worker=name))
    if started is None:
        started = {job.pk for job in held}
    errors = errors or {}
    failed = {job: errors.get(job.pk, error) for job in held if job.pk in started}
    count = Job.objects.finish(worker_id=name, failed=failed)
    count += Job.objects.release(worker_id=name, unstarted=[job for job in held if job.pk not in started])
    if count:
        logger.warning("Rescued %d job(s) from worker %s: %s", count, name, error)
    return count


def rescue_expired() -> int:
    """Rescue the jobs of every worker whose lease expired, on any machine, and of any
    worker that holds jobs but has no row at all; forget the expired workers."""
    lease = datetime.timedelta(seconds=conf.SQLQUEUE_LEASE)
    count = 0
    for name in Worker.objects.expired().values_list("name", flat=True):
        count += rescue_worker(name, WorkerLost(f"worker {name} sent no heartbeat for {lease} (SQLQUEUE_LEASE)"))
        with transaction.atomic():
            # Not if it came back to life meanwhile.
            Worker.objects.expired().filter(name=name).delete()
    orphans = (
        Job.objects.on_queue_db()
        .filter(status=JobStatus.RUNNING, started_at__lt=DatabaseNow() - lease)
        .exclude(worker__in=Worker.objects.values("name"))
        .values_list("worker", flat=True)
        .distinct()
    )
    for name in list(orphans):
        count += rescue_worker(name, WorkerLost(f"worker {name} is not registered as running"))
    return count
