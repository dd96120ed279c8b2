"""The testing helpers (``testing.py``): what was enqueued, running ready jobs in the
test's process, and running one task as a worker would."""

from __future__ import annotations

import datetime
import re

import pytest
from django.db import connection
from django.test import override_settings

from django_sqlqueue import testing
from django_sqlqueue.exceptions import InvalidJobError, UnknownTaskError
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.testing import Ran, assert_enqueued, enqueued, perform, refute_enqueued, run_jobs
from tests.djtasks.tasks import add as django_add
from tests.djtasks.tasks import async_double
from tests.testapp.models import Receipt
from tests.testapp.tasks import add, cancel_itself, countdown, fail, noop, paced, record, report, send_welcome

pytestmark = pytest.mark.django_db


# What was enqueued


def test_enqueued_matches_on_what_is_given() -> None:
    first = Job.objects.enqueue(send_welcome, [1], {"greeting": "Hi"})
    second = Job.objects.enqueue(send_welcome, (2,))
    Job.objects.enqueue(noop)
    assert enqueued(send_welcome) == [first, second]
    # Arguments match as stored: a tuple is a list.
    assert enqueued(send_welcome, args=(2,)) == [second]
    assert enqueued(send_welcome, kwargs={"greeting": "Hi"}) == [first]
    assert enqueued("tests.testapp.tasks.send_welcome", args=[1], queue="mail") == [first]
    assert enqueued(send_welcome, queue="default") == []
    assert len(enqueued()) == 3


def test_only_jobs_waiting_to_run_are_enqueued() -> None:
    waiting = Job.objects.enqueue(noop, delay=3600)
    done = Job.objects.enqueue(noop)
    Job.objects.filter(pk=done.pk).update(status=JobStatus.SUCCESSFUL)
    assert enqueued(noop) == [waiting]


def test_a_django_task_is_found_by_its_task() -> None:
    result = django_add.enqueue(2, 3)
    assert [str(job.pk) for job in enqueued(django_add, args=[2, 3])] == [result.id]


def test_an_unknown_task_is_an_error_not_a_miss() -> None:
    with pytest.raises(UnknownTaskError):
        enqueued("no.such.task")


def test_assert_enqueued_returns_the_jobs_and_checks_the_count() -> None:
    jobs = [Job.objects.enqueue(add, [1, 2]) for _ in range(2)]
    assert assert_enqueued(add, args=[1, 2]) == jobs
    assert assert_enqueued(add, count=2) == jobs
    with pytest.raises(AssertionError, match=re.escape("Expected 1 job(s) matching task='tests.testapp.tasks.add'")):
        assert_enqueued(add, count=1)


def test_assert_enqueued_says_what_is_waiting_instead() -> None:
    job = Job.objects.enqueue(add, [1, 2])
    with pytest.raises(AssertionError) as excinfo:
        assert_enqueued(add, args=[2, 1])
    assert str(excinfo.value) == (
        "Expected a job matching task='tests.testapp.tasks.add', args=[2, 1], found 0. "
        f"Waiting to run: #{job.pk} tests.testapp.tasks.add(args=[1, 2], kwargs={{}}) on 'default'"
    )


def test_refute_enqueued() -> None:
    refute_enqueued(noop)
    job = Job.objects.enqueue(noop, [1])
    refute_enqueued(noop, args=[2])
    with pytest.raises(AssertionError) as excinfo:
        refute_enqueued(noop)
    assert str(excinfo.value) == (
        "Expected no job matching task='tests.testapp.tasks.noop', found 1: "
        f"#{job.pk} tests.testapp.tasks.noop(args=[1], kwargs={{}}) on 'default'"
    )


# Running the ready jobs


def test_run_jobs_runs_what_is_ready_and_what_it_enqueues() -> None:
    Job.objects.enqueue(record, ["a"])
    Job.objects.enqueue(countdown, [3])
    assert run_jobs() == Ran(succeeded=5)
    assert list(Receipt.objects.values_list("token", flat=True)) == ["a"]
    assert set(Job.objects.values_list("status", flat=True)) == {JobStatus.SUCCESSFUL}
    assert set(Job.objects.values_list("worker", flat=True)) == {testing.WORKER_ID}


def test_run_jobs_keeps_to_its_queues_and_to_what_is_due() -> None:
    on_reports = Job.objects.enqueue(report, ["monthly"])
    later = Job.objects.enqueue(noop, delay=3600)
    elsewhere = Job.objects.enqueue(noop)
    assert run_jobs(queues=["reports"]) == Ran(succeeded=1)
    statuses = dict(Job.objects.values_list("pk", "status"))
    assert statuses == {on_reports.pk: JobStatus.SUCCESSFUL, later.pk: JobStatus.READY, elsewhere.pk: JobStatus.READY}
    assert Job.objects.get(pk=on_reports.pk).result == "monthly"


def test_a_failure_waits_out_its_backoff() -> None:
    Job.objects.enqueue(fail, ["boom"], max_attempts=3)
    assert run_jobs() == Ran(retried=1)
    assert run_jobs() == Ran()


def test_a_job_that_stops_on_a_cancel_is_counted_cancelled_and_not_retried() -> None:
    job = Job.objects.enqueue(cancel_itself)
    assert run_jobs(scheduled=True) == Ran(cancelled=1)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.CANCELLED, 1)


def test_scheduled_runs_delayed_jobs_and_every_retry() -> None:
    Job.objects.enqueue(noop, delay=3600)
    Job.objects.enqueue(fail, ["boom"], max_attempts=3)
    assert run_jobs(scheduled=True) == Ran(succeeded=1, retried=2, failed=1)
    failed = Job.objects.get(task="testapp.fail")
    assert (failed.status, [error["message"] for error in failed.errors]) == (JobStatus.FAILED, ["boom"] * 3)


def test_a_job_that_enqueues_itself_for_ever_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testing, "MAX_ATTEMPTS_RUN", 5)
    Job.objects.enqueue(countdown, [100])
    with pytest.raises(AssertionError, match="ran 5 attempts and jobs are still ready"):
        run_jobs()


# Running one task as a worker would


def test_perform_returns_the_stored_result() -> None:
    assert perform(add, 2, 3) == 5
    job = Job.objects.get()
    assert (job.status, job.attempts, job.worker) == (JobStatus.SUCCESSFUL, 1, testing.WORKER_ID)


def test_perform_runs_a_django_task_and_makes_the_json_round_trip() -> None:
    assert perform(django_add, 2, 3) == 5
    # A tuple returned is stored as a list.
    assert perform(async_double, 4) == [4, 8]


@override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": 0})
def test_perform_returns_the_result_of_a_job_its_success_deleted() -> None:
    assert perform(add, 2, 3) == 5
    assert perform(async_double, 4) == [4, 8]
    assert not Job.objects.exists()


@override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": 0})
def test_run_jobs_counts_the_successes_that_deleted_their_job() -> None:
    Job.objects.enqueue(countdown, [2])
    failing = Job.objects.enqueue(fail, ["no"], max_attempts=1)
    assert run_jobs() == Ran(succeeded=3, failed=1)
    assert list(Job.objects.values_list("pk", flat=True)) == [failing.pk]


def test_perform_refuses_what_enqueue_refuses() -> None:
    with pytest.raises(InvalidJobError, match="not JSON"):
        perform(noop, datetime.date(2026, 1, 1))
    assert not Job.objects.exists()


def test_perform_raises_what_the_task_raised_after_recording_it() -> None:
    with pytest.raises(RuntimeError, match=r"^boom$"):
        perform(fail, "boom")
    job = Job.objects.get()
    assert [error["message"] for error in job.errors] == ["boom"]


def test_perform_runs_only_its_own_job() -> None:
    other = Job.objects.enqueue(noop)
    perform(noop)
    assert Job.objects.get(pk=other.pk).status == JobStatus.READY


@pytest.mark.django_db(transaction=True)
def test_the_helpers_work_outside_a_test_transaction_too() -> None:
    assert not connection.in_atomic_block
    Job.objects.enqueue(countdown, [2])
    assert run_jobs() == Ran(succeeded=3)


@pytest.mark.django_db
def test_perform_says_when_a_rate_limit_holds_its_job_back() -> None:
    with override_settings(SQLQUEUE_RATE_LIMITS={"test-rate": "1/h"}):
        perform(paced)
        with pytest.raises(AssertionError, match=r"perform\(\) could not claim job #\d+ \(tests.testapp.tasks.paced\)"):
            perform(paced)


def test_run_jobs_waits_for_the_tokens_of_rate_limited_jobs() -> None:
    with override_settings(SQLQUEUE_RATE_LIMITS={"test-rate": "50/s burst 2"}):
        Job.objects.enqueue_many(Job.objects.build(paced) for _ in range(6))
        assert run_jobs() == Ran(succeeded=6)
    assert not Job.objects.filter(status=JobStatus.READY).exists()


def test_run_jobs_says_which_jobs_it_gave_up_waiting_for() -> None:
    with override_settings(SQLQUEUE_RATE_LIMITS={"test-rate": "1/h"}):
        Job.objects.enqueue_many(Job.objects.build(paced) for _ in range(3))
        held = r"^run_jobs\(\) waited 0.2 s for 2 due job\(s\) that their rate limits"
        with pytest.raises(AssertionError, match=held):
            run_jobs(held_back=0.2)
    assert Job.objects.filter(status=JobStatus.READY).count() == 2
