"""The wakeup of an idle worker, in a real ``runworkers``."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from django_sqlqueue.models import Job, JobStatus
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
