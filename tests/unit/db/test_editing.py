"""A person's edit of a job (``db/editing.py``, ``Job.objects.edit``): checked as an
enqueue, written only to the job as it was read, its derived keys derived again."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.utils import timezone

from django_sqlqueue.db.editing import Edit
from django_sqlqueue.exceptions import InvalidJobError, UnknownTaskError
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.lifecycle import ADMIN_EDITS, EDITABLE, TRANSITIONS
from tests.testapp.tasks import add, per_tenant, sync_order

pytestmark = pytest.mark.django_db

LATER = datetime.timedelta(hours=2)


def edit_of(job: Job, **changes: Any) -> Edit:
    """The edit that keeps ``job`` as it is but for ``changes``."""
    fields = {name: getattr(job, name) for name in ("args", "kwargs", "queue", "priority", "max_attempts")}
    return Edit(**{**fields, "run_at": timezone.now(), **changes})


def test_an_edit_writes_what_it_runs_and_how_and_returns_the_job_before() -> None:
    job = Job.objects.enqueue(add, (1, 2))
    run_at = (timezone.now() + LATER).replace(microsecond=0)
    before = Job.objects.edit(job, edit_of(job, args=[3], kwargs={"b": 4}, queue="mail", priority=7, run_at=run_at))
    assert before is not None
    assert (before.args, before.queue) == ([1, 2], "default")
    edited = Job.objects.get(pk=job.pk)
    assert (edited.args, edited.kwargs, edited.queue, edited.priority) == ([3], {"b": 4}, "mail", 7)
    assert (edited.run_at, edited.status, edited.attempts) == (run_at, JobStatus.READY, 0)


@pytest.mark.parametrize("status", EDITABLE)
def test_every_status_no_worker_holds_keeps_its_status(status: str) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    Job.objects.filter(pk=job.pk).update(status=status, attempts=3)
    job.refresh_from_db()
    assert Job.objects.edit(job, edit_of(job, max_attempts=9)) is not None
    assert Job.objects.values_list("status", "attempts", "max_attempts").get(pk=job.pk) == (status, 3, 9)


@pytest.mark.parametrize("status", [JobStatus.RUNNING, JobStatus.SUCCESSFUL])
def test_a_running_or_successful_job_is_never_edited(status: str) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    Job.objects.filter(pk=job.pk).update(status=status)
    job.refresh_from_db()
    assert Job.objects.edit(job, edit_of(job, args=[5, 5])) is None
    assert Job.objects.get(pk=job.pk).args == [1, 2]


def test_a_job_claimed_since_it_was_read_is_left_alone() -> None:
    job = Job.objects.enqueue(add, (1, 2))
    [claimed] = Job.objects.claim(worker_id="w1")
    assert claimed.pk == job.pk
    # Read before the claim: READY with no attempt.
    assert (job.status, job.attempts) == (JobStatus.READY, 0)
    assert Job.objects.edit(job, edit_of(job, args=[5, 5])) is None
    assert Job.objects.values_list("status", "args").get(pk=job.pk) == (JobStatus.RUNNING, [1, 2])


def test_a_job_claimed_and_given_back_since_it_was_read_is_left_alone() -> None:
    """Its status is as read, but not its attempt: the compare is on both."""
    job = Job.objects.enqueue(add, (1, 2))
    Job.objects.filter(pk=job.pk).update(attempts=1)
    assert Job.objects.edit(job, edit_of(job, args=[5, 5])) is None
    assert Job.objects.get(pk=job.pk).args == [1, 2]


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"args": [1]}, "its arguments do not fit add(a, b): missing a required argument: 'b'"),
        ({"args": [1, 2, 3]}, "3 positional arguments given, but it takes 2 (a, b)"),
        ({"args": [float("nan"), 1]}, "args[0] is nan, which JSON cannot represent"),
        ({"priority": 10_000}, "priority must be an integer from"),
        ({"max_attempts": 0}, "max_attempts must be an integer from 1"),
        ({"queue": ""}, "a queue name must be a non-empty string"),
        ({"queue": "q" * 300}, "is longer than"),
        ({"run_at": datetime.datetime(2030, 1, 1)}, "is naive but USE_TZ is on"),
    ],
)
def test_an_edit_an_enqueue_would_refuse_is_refused_whole(changes: dict[str, Any], problem: str) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    with pytest.raises(InvalidJobError, match=f"^Cannot edit job {job.pk}: ") as raised:
        Job.objects.edit(job, edit_of(job, **changes))
    assert problem in str(raised.value)
    assert Job.objects.values_list("args", "priority", "max_attempts").get(pk=job.pk) == ([1, 2], 0, 3)


def test_a_job_of_a_task_no_longer_registered_is_not_edited() -> None:
    job = Job.objects.enqueue(add, (1, 2))
    Job.objects.filter(pk=job.pk).update(task="gone.task")
    job.refresh_from_db()
    with pytest.raises(UnknownTaskError):
        Job.objects.edit(job, edit_of(job))


def test_a_unique_key_derived_from_the_arguments_is_derived_again() -> None:
    job = Job.objects.enqueue(sync_order, (1,))
    assert Job.objects.edit(job, edit_of(job, args=[2])) is not None
    assert Job.objects.get(pk=job.pk).unique_key == Job.objects.build(sync_order, (2,)).unique_key


def test_a_unique_key_given_to_enqueue_is_kept() -> None:
    job = Job.objects.enqueue(sync_order, (1,), unique_key="order-one")
    assert Job.objects.edit(job, edit_of(job, args=[2])) is not None
    assert Job.objects.get(pk=job.pk).unique_key == "order-one"


def test_an_edit_to_a_unique_key_another_job_holds_is_refused() -> None:
    holder = Job.objects.enqueue(sync_order, (2,))
    job = Job.objects.enqueue(sync_order, (1,))
    with pytest.raises(InvalidJobError, match="another job holds the unique key"):
        Job.objects.edit(job, edit_of(job, args=[2]))
    assert Job.objects.get(pk=job.pk).args == [1]
    assert Job.objects.get(pk=holder.pk).args == [2]


def test_a_concurrency_key_derived_from_the_arguments_is_derived_again() -> None:
    job = Job.objects.enqueue(per_tenant, ("acme",))
    assert Job.objects.edit(job, edit_of(job, args=["globex"])) is not None
    edited = Job.objects.get(pk=job.pk)
    assert edited.concurrency_key == Job.objects.build(per_tenant, ("globex",)).concurrency_key
    assert edited.concurrency_key != job.concurrency_key


def test_the_edits_are_in_the_table_and_keep_their_status() -> None:
    assert {edit.name for edit in ADMIN_EDITS} <= TRANSITIONS.keys()
    assert [(edit.sources, edit.target) for edit in ADMIN_EDITS] == [((status,), status) for status in EDITABLE]
    assert JobStatus.RUNNING not in EDITABLE
