"""``Job.objects.cancel()``: ready jobs cancelled at once, running ones asked to stop."""

from __future__ import annotations

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.admin_helpers import make_job

pytestmark = pytest.mark.django_db


def test_cancel_by_ids_and_by_queryset() -> None:
    ready = make_job(JobStatus.READY)
    running = make_job(JobStatus.RUNNING, worker="w")
    failed = make_job(JobStatus.FAILED)
    assert Job.objects.cancel([ready.pk, running.pk, failed.pk]) == (1, 1)
    ready.refresh_from_db()
    running.refresh_from_db()
    assert (ready.status, ready.finished_at is not None, ready.cancel_requested_at) == (
        JobStatus.CANCELLED,
        True,
        None,
    )
    assert (running.status, running.cancel_requested_at is not None) == (JobStatus.RUNNING, True)
    assert Job.objects.get(pk=failed.pk).status == JobStatus.FAILED
    # Asked once: the first request's time stays.
    assert Job.objects.cancel(Job.objects.all()) == (0, 0)
    assert Job.objects.get(pk=running.pk).cancel_requested_at == running.cancel_requested_at


def test_cancel_of_nothing() -> None:
    assert Job.objects.cancel([]) == (0, 0)
    assert Job.objects.cancel(Job.objects.none()) == (0, 0)
