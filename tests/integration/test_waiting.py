"""Waiting for a job to finish while a real ``runworkers`` runs it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import pytest
from django.test import override_settings

from django_sqlqueue import await_for, cancel_jobs, wait_for
from django_sqlqueue.backends.compat import TaskResultStatus
from django_sqlqueue.exceptions import WaitTimeout
from django_sqlqueue.models import Job, JobStatus
from tests.djtasks import tasks as djtasks
from tests.support.workers import Workers, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import add, fail, sleep_once_started


@pytest.mark.slow
def test_waits_for_what_a_worker_does(start_workers: Callable[..., Workers]) -> None:
    # The job of "nobody-serves-this" below waits for ever: the worker runs the tasks' queues only.
    workers = start_workers("--queues", "default,reports", "--processes", "1", "--threads", "2")

    summed = Job.objects.enqueue(add, (2, 3))
    assert summed.wait(timeout=60) is summed, workers.text()
    assert (summed.status, summed.result) == (JobStatus.SUCCESSFUL, 5)
    # Finished already: read once, returned.
    assert Job.objects.wait(summed.pk, timeout=0).result == 5

    failed = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    assert Job.objects.wait(failed, timeout=60).status == JobStatus.FAILED
    assert failed.status == JobStatus.READY  # the manager's wait returns a copy

    token = uuid.uuid4().hex
    running = Job.objects.enqueue(sleep_once_started, (token, 60))
    wait_until(lambda: Receipt.objects.filter(token=token).exists(), timeout=60, why=workers.text)
    cancel_jobs([running.pk])
    assert running.wait(timeout=60).status == JobStatus.CANCELLED

    unserved = Job.objects.enqueue(add, (1, 1), queue="nobody-serves-this")
    with pytest.raises(WaitTimeout) as raised:
        unserved.wait(timeout=0.3)
    last_read = raised.value.job
    assert isinstance(last_read, Job)
    assert (last_read.pk, last_read.status) == (unserved.pk, JobStatus.READY)
    assert str(raised.value) == f"Job {unserved.pk} did not finish within 0.3 s (it is READY)."

    awaited = Job.objects.enqueue(add, (4, 5))
    assert asyncio.run(awaited.await_finished(timeout=60)).result == 9

    result = djtasks.add.enqueue(20, 22)
    assert wait_for(result, timeout=60) is result
    assert (result.status, result.return_value, result.is_finished) == (TaskResultStatus.SUCCESSFUL, 42, True)
    failed_result = djtasks.fail.enqueue("no")
    Job.objects.filter(pk=failed_result.id).update(max_attempts=1)
    asyncio.run(await_for(failed_result, timeout=60))
    assert failed_result.status == TaskResultStatus.FAILED
    assert failed_result.errors[-1].exception_class is ValueError

    assert workers.stop() == 0, workers.text()


@pytest.mark.slow
def test_a_success_that_deletes_its_job_is_waited_for(start_workers: Callable[..., Workers]) -> None:
    """``SQLQUEUE_RETENTION["SUCCESSFUL"]`` 0: the row is gone, and the wait says it succeeded."""
    workers = start_workers("--processes", "1", SQLQUEUE_RETENTION='{"SUCCESSFUL": 0}')
    with override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": 0}):
        job = Job.objects.enqueue(add, (2, 3))
        waited = job.wait(timeout=60)
        result = djtasks.add.enqueue(1, 2)
        wait_for(result, timeout=60)
    assert (waited.status, waited.result, waited.finished_at) == (JobStatus.SUCCESSFUL, None, None)
    assert not Job.objects.filter(pk=job.pk).exists()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value is None
    assert workers.stop() == 0, workers.text()
