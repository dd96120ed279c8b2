"""The wakeup of an idle worker, in a real ``runworkers``."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from django_sqlqueue.models import Job, JobStatus, Worker
from tests.support.workers import Workers, wait_until
from tests.testapp.tasks import add


@pytest.mark.slow
def test_idle_worker_runs_a_job_enqueued_later(start_workers: Callable[..., Workers]) -> None:
    workers = start_workers("--processes", "1", SQLQUEUE_POLL_INTERVAL="0.5")
    time.sleep(2)  # the worker has found nothing and gone idle
    job = Job.objects.enqueue(add, (2, 3))
    wait_until(
        lambda: Job.objects.filter(pk=job.pk, status=JobStatus.SUCCESSFUL).exists(),
        timeout=30,
        why=lambda: f"{Job.objects.values('status', 'errors').get(pk=job.pk)}\n{workers.text()}",
    )
    assert workers.stop() == 0, workers.text()


@pytest.mark.slow
def test_idle_workers_start_a_job_long_before_their_poll_interval(start_workers: Callable[..., Workers]) -> None:
    """Both processes have backed off to a 5 s poll; an enqueue from this process (this
    host) wakes them at once: a datagram on SQLite and MySQL/MariaDB, NOTIFY on PostgreSQL."""
    workers = start_workers("--processes", "2", SQLQUEUE_POLL_INTERVAL="5")
    wait_until(lambda: Worker.objects.count() == 2, timeout=60, why=workers.text)
    time.sleep(7)  # their waits are 1.6 s, then 3.2 s, then 5 s long by now
    jobs = Job.objects.enqueue_many([Job.objects.build(add, (2, 3)) for _ in range(2)])
    wait_until(
        lambda: Job.objects.filter(pk__in=[job.pk for job in jobs], status=JobStatus.SUCCESSFUL).count() == 2,
        timeout=30,
        why=workers.text,
    )
    for job in Job.objects.filter(pk__in=[job.pk for job in jobs]):
        assert job.started_at is not None
        assert (job.started_at - job.enqueued_at).total_seconds() < 2, workers.text()
    assert workers.stop() == 0, workers.text()
