"""Cancelling running jobs, and their progress, with real ``runworkers`` (``Job.objects.cancel``, which the
admin's Cancel calls): a job that stops on the request and one that ignores it both end
``CANCELLED``, the second once ``SQLQUEUE_CANCEL_GRACE`` is out, and neither is retried."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import Workers, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import ignore_cancel, noop, report_and_wait, stop_when_cancelled

pytestmark = pytest.mark.slow

StartWorkers = Callable[..., Workers]

CANCELLED = "django_sqlqueue.exceptions.JobCancelled"


def started(token: str, workers: Workers) -> None:
    wait_until(lambda: Receipt.objects.filter(token=token).exists(), timeout=60, why=workers.text)


def ends_cancelled(job: Job, workers: Workers, timeout: float) -> Job:
    wait_until(lambda: Job.objects.get(pk=job.pk).status == JobStatus.CANCELLED, timeout=timeout, why=workers.text)
    time.sleep(1.5)  # a retry would have been claimed by now
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.CANCELLED, 1), workers.text()
    assert [error["exception_class_path"] for error in job.errors] == [CANCELLED]
    assert job.finished_at is not None
    return job


def test_a_job_that_stops_on_the_request_ends_cancelled(start_workers: StartWorkers) -> None:
    workers = start_workers("--processes", "1", "--threads", "2")
    job = Job.objects.enqueue(stop_when_cancelled, ("coop",))
    started("coop", workers)
    assert Job.objects.cancel([job.pk]) == (0, 1)
    ends_cancelled(job, workers, timeout=20)
    # The process was not killed: it goes on taking jobs.
    after = Job.objects.enqueue(noop)
    wait_until(lambda: Job.objects.get(pk=after.pk).status == JobStatus.SUCCESSFUL, timeout=30, why=workers.text)
    assert "was killed" not in workers.text()
    assert workers.stop() == 0, workers.text()


def test_a_job_that_ignores_the_request_is_stopped_after_the_grace(start_workers: StartWorkers) -> None:
    workers = start_workers("--processes", "1", SQLQUEUE_CANCEL_GRACE="1")
    job = Job.objects.enqueue(ignore_cancel, ("stubborn",))
    started("stubborn", workers)
    Job.objects.cancel(Job.objects.filter(pk=job.pk))
    job = ends_cancelled(job, workers, timeout=30)
    assert "SQLQUEUE_CANCEL_GRACE" in job.errors[0]["message"]
    assert workers.stop() == 0, workers.text()


def test_progress_is_visible_while_the_job_runs(start_workers: StartWorkers) -> None:
    workers = start_workers("--processes", "1")
    job = Job.objects.enqueue(report_and_wait, ("progress",))
    started("progress", workers)
    running = Job.objects.get(pk=job.pk)
    assert running.status == JobStatus.RUNNING
    assert running.progress == {"done": 3, "total": 10, "message": "three of ten"}
    Job.objects.cancel([job.pk])
    ends_cancelled(job, workers, timeout=20)
    assert workers.stop() == 0, workers.text()
