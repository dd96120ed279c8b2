"""What an admin Retry brings back with a failed job (``db/dependents.py``): the jobs
its end cancelled, all the way down, unless something else stops them."""

from __future__ import annotations

import pytest

from django_sqlqueue.db import dependents
from django_sqlqueue.models import Job, JobDependency, JobStatus
from django_sqlqueue.testing import run_jobs
from tests.testapp.tasks import fail, noop

pytestmark = pytest.mark.django_db


def _found(*retried: Job) -> set[int]:
    return dependents.cancelled_dependents(Job, "default", [job.pk for job in retried], lock=False)


def test_a_diamond_below_a_failed_job_comes_back_whole() -> None:
    parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    left = Job.objects.enqueue(noop, after=[parent])
    right = Job.objects.enqueue(noop, after=[parent])
    bottom = Job.objects.enqueue(noop, after=[left, right, parent])
    run_jobs()
    assert _found(parent) == {left.pk, right.pk, bottom.pk}
    Job.objects.filter(pk=parent.pk).update(status=JobStatus.READY)  # as the admin's retry writes it
    assert dependents.retry_dependents(Job, "default", [parent.pk]) == dependents.Restored(3)
    rows = dict(Job.objects.values_list("pk", "waiting_for"))
    assert (rows[left.pk], rows[right.pk], rows[bottom.pk]) == (1, 1, 3)
    assert not JobDependency.objects.filter(settled=True).exists()
    assert dependents.retry_dependents(Job, "default", [parent.pk]) == dependents.Restored(0)  # once


def test_a_deleted_parent_or_one_that_failed_on_its_own_keeps_its_children_cancelled() -> None:
    parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    gone = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent, gone])
    grandchild = Job.objects.enqueue(noop, after=[child])
    Job.objects.filter(pk=gone.pk).delete()
    run_jobs()
    assert _found(parent) == set()
    assert set(Job.objects.filter(pk__in=[child.pk, grandchild.pk]).values_list("status", flat=True)) == {
        JobStatus.CANCELLED
    }


def test_a_job_cancelled_by_hand_is_not_brought_back() -> None:
    parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    child = Job.objects.enqueue(noop, after=[parent])
    Job.objects.cancel([child.pk])
    run_jobs()
    assert _found(parent) == set()
