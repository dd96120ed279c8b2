"""``current_job()`` and its handle (``current.py``), in the test process through
``django_sqlqueue.testing``; with real workers, ``tests/integration/test_cancelling.py``."""

from __future__ import annotations

import pytest

from django_sqlqueue import current_job
from django_sqlqueue.current import running
from django_sqlqueue.exceptions import JobCancelled
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.runner.execution import attempt
from django_sqlqueue.testing import perform
from tests.testapp.tasks import whoami

pytestmark = pytest.mark.django_db


def test_none_outside_a_job() -> None:
    assert current_job() is None


def test_inside_perform_the_handle_names_the_job() -> None:
    seen = perform(whoami)
    [job] = Job.objects.all()
    assert seen == {
        "id": job.pk,
        "task": job.task,
        "queue": "default",
        "attempt": 1,
        "cancel_requested": False,
    }
    assert current_job() is None  # reset after the job


def test_the_handle_sees_a_cancel_request_its_job_carries() -> None:
    Job.objects.enqueue(whoami)
    [job] = Job.objects.claim(worker_id="w")
    assert Job.objects.cancel([job.pk]) == (0, 1)
    job.refresh_from_db()  # as the worker's heartbeat does
    outcome = attempt(job, "w")
    assert outcome.result["cancel_requested"] is True


def test_raise_if_cancelled_raises_once_asked_and_the_job_ends_cancelled_not_retried() -> None:
    Job.objects.enqueue(whoami)
    [job] = Job.objects.claim(worker_id="w")
    with running(job, "w") as handle:
        handle.raise_if_cancelled()  # not asked: nothing
        Job.objects.cancel(Job.objects.filter(pk=job.pk))
        job.refresh_from_db()
        with pytest.raises(JobCancelled, match=f"job {job.pk} was cancelled"):
            handle.raise_if_cancelled()
    assert Job.objects.finish(worker_id="w", failed={job: JobCancelled("stop")}) == 1
    job.refresh_from_db()
    assert (job.status, job.attempts, job.last_error_class) == (
        JobStatus.CANCELLED,
        1,
        "django_sqlqueue.exceptions.JobCancelled",
    )
