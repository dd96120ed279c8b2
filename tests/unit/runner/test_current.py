"""``current_job()`` and its handle (``runner/current.py``), in the test process through
``django_sqlqueue.testing``; with real workers, ``tests/integration/test_cancelling.py``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction

from django_sqlqueue import current_job
from django_sqlqueue.db import dependencies
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.exceptions import JobCancelled, WorkerLost
from django_sqlqueue.maintenance.rescue import rescue_worker
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.runner.current import JobHandle
from django_sqlqueue.runner.execution import attempt
from django_sqlqueue.testing import perform, run_jobs
from tests.djtasks.tasks import current_job_id, current_job_id_async
from tests.testapp.tasks import add, fail, gather, whoami

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
    with JobHandle(job, "w") as handle:
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


def claimed(worker: str = "w") -> Job:
    Job.objects.enqueue(whoami)
    [job] = Job.objects.claim(worker_id=worker)
    return job


def progress_of(job: Job) -> object:
    return Job.objects.values_list("progress", flat=True).get(pk=job.pk)


def test_report_progress_writes_at_most_once_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    job = claimed()
    with JobHandle(job, "w") as handle:
        assert handle.report_progress(1, 10, "one") is True
        assert progress_of(job) == {"done": 1, "total": 10, "message": "one"}
        clock[0] += 0.5
        assert handle.report_progress(2, 10) is False  # too soon: not written
        assert progress_of(job) == {"done": 1, "total": 10, "message": "one"}
        assert handle.report_progress(10, 10, "all") is True  # the last one always is
        clock[0] += 1
        assert handle.report_progress(11, message="x" * 300) is True
    assert progress_of(job) == {"done": 11, "total": None, "message": "x" * 255}


def test_the_old_owner_of_a_rescued_job_writes_no_progress() -> None:
    job = claimed("old")
    with JobHandle(job, "old") as handle:
        assert rescue_worker("old", WorkerLost("gone")).count == 1
        assert handle.report_progress(1, 2) is False
        Job.objects.filter(pk=job.pk).update(run_at=DatabaseNow())  # its retry is due now
        [again] = Job.objects.claim(worker_id="new")  # the same job, claimed again (attempt 2)
        assert again.pk == job.pk
        assert handle.report_progress(2, 2) is False
    assert progress_of(job) is None


def refuse_progress(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
    """The database refusing the progress write (as when it is away), and nothing else."""
    if "progress" in sql and sql.lstrip().upper().startswith("UPDATE"):
        raise OperationalError("the database went away")
    return execute(sql, *args)


def test_a_refused_progress_write_is_logged_and_the_task_carries_on(caplog: pytest.LogCaptureFixture) -> None:
    job = claimed()
    with JobHandle(job, "w") as handle, transaction.atomic():  # the task's own transaction
        Job.objects.filter(pk=job.pk).update(priority=5)
        with connection.execute_wrapper(refuse_progress):
            assert handle.report_progress(1, 2, "half") is False
        assert Job.objects.get(pk=job.pk).priority == 5  # its transaction still works
    assert progress_of(job) is None
    assert f"Progress of job {job.pk} not recorded: the database went away" in caplog.text


@pytest.mark.parametrize(
    ("done", "total", "message"),
    [(-1, None, ""), (True, None, ""), (1, 0, ""), (1, float("inf"), ""), ("1", None, ""), (1, None, None)],
)
def test_bad_progress_is_refused(done: object, total: object, message: object) -> None:
    with JobHandle(claimed(), "w") as handle, pytest.raises(ValueError, match="must be"):
        handle.report_progress(done, total, message)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("done", "total", "message", "problem"),
    [
        (1, 2, "a\x00b", "progress['message'] holds the character NUL (\\x00), which PostgreSQL cannot store."),
        (1, 2, "a\ud800", "progress['message'] holds the surrogate '\\ud800', which is not a character"),
        (10**30, None, "", "progress['done'] is an integer of 100 bits, past the 64-bit range"),
        (1, 1e20, "", "progress['total'] is 1e+20, a float PostgreSQL would give back as an int"),
    ],
)
def test_progress_no_database_stores_as_itself_is_refused_and_nothing_is_written(
    done: float, total: float | None, message: str, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: a raw SQL error logged on PostgreSQL (and False), or a number stored as another.
    job = claimed()
    with JobHandle(job, "w") as handle, pytest.raises(ValueError, match=re.escape(problem)):
        handle.report_progress(done, total, message)
    assert progress_of(job) is None
    assert "not recorded" not in caplog.text


@pytest.mark.parametrize("task", [current_job_id, current_job_id_async])
def test_a_django_task_has_it_too(task: Any) -> None:
    returned = perform(task)
    assert returned == Job.objects.get().pk


def test_add_meta_merges_into_the_jobs_meta_while_its_worker_holds_it() -> None:
    Job.objects.enqueue(whoami, meta={"source": "s3", "rows": 0})
    [job] = Job.objects.claim(worker_id="w")
    with JobHandle(job, "w") as handle:
        assert handle.add_meta({"rows": 120, "file": "a.csv"}) is True
        assert handle.meta == {"source": "s3", "rows": 120, "file": "a.csv"}
        with pytest.raises(ValueError, match=r"meta\['bad'\] is a set"):
            handle.add_meta({"bad": {1}})
    assert Job.objects.get(pk=job.pk).meta == {"source": "s3", "rows": 120, "file": "a.csv"}
    # Rescued and claimed by another worker: the old owner writes nothing.
    Job.objects.filter(pk=job.pk).update(worker="other")
    with JobHandle(job, "w") as handle:
        assert handle.add_meta({"late": True}) is False
    assert Job.objects.get(pk=job.pk).meta == {"source": "s3", "rows": 120, "file": "a.csv"}


def test_dependency_results_is_a_result_as_it_is_keyed_by_id_strings_in_after_order() -> None:
    # What a user writes first: return what the jobs waited for returned, unchanged.
    one, two = Job.objects.enqueue(add, (1, 2)), Job.objects.enqueue(add, (3, 4))
    failing = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    final = Job.objects.enqueue(gather, ("final",), after=[two, failing, one], after_failure="run")
    run_jobs()
    final.refresh_from_db()
    assert final.status == JobStatus.SUCCESSFUL, final.errors
    assert final.result == {str(two.pk): 7, str(failing.pk): None, str(one.pk): 3}
    # In after= order as returned (PostgreSQL's jsonb keeps no order of keys when stored).
    assert list(dependencies.results(Job, "default", final.pk)) == [str(two.pk), str(failing.pk), str(one.pk)]
    assert final.result[str(one.pk)] == 3


def test_an_attempts_failure_is_decided_once_and_a_new_exception_anew() -> None:
    Job.objects.enqueue(whoami)
    (job,) = Job.objects.claim(worker_id="w")
    handle = JobHandle(job, "w")
    raised, other = RuntimeError("first"), RuntimeError("raised by a middleware instead")
    decided = handle.decision(raised)
    assert handle.decision(raised) is decided
    assert decided.record is not None
    assert decided.record["worker"] == "w"
    assert handle.decision(other).error is other
