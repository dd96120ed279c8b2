"""Waiting for a job to finish (``db/waiting.py``, ``Job.objects.wait``), in this process:
a finish written from another thread, one already written, a timeout, a transaction, a
row gone, and the news it listens to. A real worker's finish is waited for in
``tests/integration/test_waiting.py``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import django
import pytest
from django.db import connections, transaction
from django.db.transaction import TransactionManagementError

from django_sqlqueue import wait_for
from django_sqlqueue.backends.compat import TaskResultStatus
from django_sqlqueue.db.waiting import FinishNews
from django_sqlqueue.exceptions import WaitTimeout
from django_sqlqueue.models import Job, JobStatus
from tests.djtasks import tasks as djtasks
from tests.testapp.tasks import add

pytestmark = pytest.mark.django_db(transaction=True)


def finish_in_a_thread(job: Job, outcome: dict[str, Any]) -> threading.Thread:
    """Claim ``job`` and finish it with ``outcome`` (``succeeded`` or ``failed``) from a thread."""

    def run() -> None:
        try:
            (claimed,) = Job.objects.claim(worker_id="w", limit=1)
            assert claimed.pk == job.pk
            Job.objects.finish(worker_id="w", **{key: {claimed: value} for key, value in outcome.items()})
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_returns_the_job_once_another_thread_finished_it(short_folder: object) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    thread = finish_in_a_thread(job, {"succeeded": 3})
    try:
        waited = job.wait(timeout=30)
    finally:
        thread.join()
    assert waited is job
    assert (job.status, job.result, job.finished_at is not None) == (JobStatus.SUCCESSFUL, 3, True)


def test_a_failure_with_no_attempt_left_ends_the_wait(short_folder: object) -> None:
    job = Job.objects.enqueue(add, (1, 2), max_attempts=1)
    thread = finish_in_a_thread(job, {"failed": ValueError("no")})
    try:
        waited = Job.objects.wait(job.pk, timeout=30)
    finally:
        thread.join()
    assert waited.status == JobStatus.FAILED
    assert waited.errors[-1]["exception_class_path"] == "builtins.ValueError"


def test_a_finished_job_is_returned_at_once_a_cancelled_one_too() -> None:
    job = Job.objects.enqueue(add, (1, 2))
    Job.objects.cancel([job.pk])
    assert Job.objects.wait(job.pk, timeout=0).status == JobStatus.CANCELLED


def test_a_job_unfinished_at_its_timeout_raises() -> None:
    job = Job.objects.enqueue(add, (1, 2))
    with pytest.raises(WaitTimeout) as raised:
        job.wait(timeout=0.05)
    assert isinstance(raised.value, TimeoutError)
    last_read = raised.value.job
    assert isinstance(last_read, Job)
    assert (last_read.pk, last_read.status) == (job.pk, JobStatus.READY)
    assert job.status == JobStatus.READY


def test_waiting_inside_a_transaction_is_refused() -> None:
    job = Job.objects.enqueue(add, (1, 2))
    with transaction.atomic(), pytest.raises(TransactionManagementError, match=r"outside transaction\.atomic"):
        job.wait(timeout=1)


def test_a_job_gone_is_a_success_only_where_successes_delete_their_jobs(settings: Any) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    Job.objects.filter(pk=job.pk).delete()
    with pytest.raises(Job.DoesNotExist, match=f"Job {job.pk} is gone"):
        Job.objects.wait(job.pk, timeout=1)
    settings.SQLQUEUE_RETENTION = {"SUCCESSFUL": 0}
    gone = Job.objects.wait(job, timeout=1)
    assert gone is not job
    assert (gone.pk, gone.task, gone.status, gone.result, gone.finished_at) == (
        job.pk,
        job.task,
        JobStatus.SUCCESSFUL,
        None,
        None,
    )
    assert Job.objects.wait(job.pk, timeout=1).status == JobStatus.SUCCESSFUL


def test_the_async_form_waits_in_a_thread_of_its_own(short_folder: object) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    thread = finish_in_a_thread(job, {"succeeded": 3})
    try:
        waited = asyncio.run(job.await_finished(timeout=30))
    finally:
        thread.join()
    assert (waited, job.result) == (job, 3)


def test_a_task_result_is_refreshed_once_it_finished(short_folder: object) -> None:
    result = djtasks.add.enqueue(1, 2)
    thread = finish_in_a_thread(Job.objects.get(pk=result.id), {"succeeded": 3})
    try:
        assert wait_for(result, timeout=30) is result
    finally:
        thread.join()
    assert (result.status, result.return_value, result.finished_at is not None) == (
        TaskResultStatus.SUCCESSFUL,
        3,
        True,
    )


def test_a_result_of_another_backend_is_refused(settings: Any) -> None:
    framework = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"  # the backport on 5.2
    settings.TASKS = {**settings.TASKS, "immediate": {"BACKEND": f"{framework}.backends.immediate.ImmediateBackend"}}
    other = djtasks.add.using(backend="immediate").enqueue(1, 2)
    with pytest.raises(TypeError, match="'immediate' is not a SQLQueueBackend"):
        wait_for(other, timeout=0)


def test_news_of_other_jobs_does_not_end_a_wait(short_folder: object) -> None:
    """News naming other jobs is read and dropped: the wait runs its time."""
    mine, other = Job.objects.enqueue(add, (1, 2)), Job.objects.enqueue(add, (3, 4))
    news = FinishNews.open("default")
    try:
        thread = finish_in_a_thread(mine, {"succeeded": 3})
        thread.join()
        assert not news.wait(other.pk, 0.1)
    finally:
        news.close()
