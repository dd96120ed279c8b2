"""Snoozes (``raise Snooze(delay)``, ``current_job().snooze(delay)``), as the finisher
decides and writes them (``db/finishing.py``): back to ``READY`` at the database's clock
plus the delay, the attempt given back, the snooze counted; ``FAILED`` past the task's
``max_snoozes``; fenced like every finish; and no weight on a later failure's backoff."""

from __future__ import annotations

import datetime
from collections import Counter
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_sqlqueue import job
from django_sqlqueue.backends.compat import TaskResultStatus, task, task_finished
from django_sqlqueue.db import finishing
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.exceptions import Snooze, WorkerLost
from django_sqlqueue.maintenance.rescue import rescue_worker
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules import failures, lifecycle
from django_sqlqueue.runner import execution
from django_sqlqueue.testing import Ran, run_jobs
from tests.djtasks.tasks import snooze_at_most_never, snooze_for
from tests.support.attempts import db_now
from tests.support.task_options import needs_task_options
from tests.testapp.tasks import noop, snooze, snooze_then_fail, sync_order

pytestmark = pytest.mark.django_db

# The database's clock may keep only milliseconds (SQLite).
SLACK = datetime.timedelta(milliseconds=2)
TOO_OFTEN = "django_sqlqueue.exceptions.SnoozedTooOften"


def claim_one(worker_id: str = "w") -> Job:
    (job,) = Job.objects.claim(worker_id=worker_id)
    return job


def run_and_finish(job: Job, worker_id: str = "w") -> dict[str, int]:
    """Run ``job`` as a worker does, write its outcome: the outcomes written."""
    outcome = execution.attempt(job, worker_id)
    assert outcome.failure is not None, outcome
    return dict(Counter(ended.transition.outcome for ended in finish(job, outcome.failure, worker_id)))


def finish(job: Job, failure: failures.Failure, worker_id: str = "w") -> list[finishing.Ended]:
    return Job.objects.finish_as_decided(worker_id=worker_id, succeeded={}, failed={job: failure})


def test_a_snooze_is_ready_again_at_the_database_clock_plus_its_delay_its_attempt_not_counted() -> None:
    Job.objects.enqueue(snooze, (90,))
    job = claim_one()
    assert job.attempts == 1
    before = db_now()
    assert run_and_finish(job) == {"snoozed": 1}
    after = db_now()
    job.refresh_from_db()
    assert (job.status, job.attempts, job.snoozes) == (JobStatus.READY, 0, 1)
    assert (job.errors, job.last_error_class) == ([], "")
    assert before + datetime.timedelta(seconds=90) - SLACK <= job.run_at <= after + datetime.timedelta(seconds=90)
    assert not Job.objects.ready().exists()


def test_the_handle_s_snooze_raises_snooze() -> None:
    Job.objects.enqueue(snooze_then_fail, (1,))
    outcome = execution.attempt(claim_one(), "w")
    assert isinstance(outcome.error, Snooze)
    assert outcome.failure is not None
    assert (outcome.failure.transition, outcome.failure.delay) == (lifecycle.SNOOZE, datetime.timedelta(0))


def test_past_its_max_snoozes_the_job_is_failed_with_a_clear_error_whatever_its_attempts_left() -> None:
    Job.objects.enqueue(snooze, (0,))
    Job.objects.update(snoozes=2)  # @job(max_snoozes=2)
    job = claim_one()
    assert run_and_finish(job) == {"failed": 1}
    job.refresh_from_db()
    assert (job.status, job.attempts, job.max_attempts, job.snoozes) == (JobStatus.FAILED, 1, 3, 2)
    assert job.last_error_class == TOO_OFTEN
    assert job.errors[-1]["message"] == "tests.testapp.tasks.snooze snoozed 3 times, more than its max_snoozes (2)"
    assert job.finished_at is not None


@override_settings(SQLQUEUE_MAX_SNOOZES=0)
def test_a_task_without_its_own_max_snoozes_has_the_setting_s() -> None:
    Job.objects.enqueue(snooze_then_fail, (1,))
    job = claim_one()
    assert run_and_finish(job) == {"failed": 1}
    job.refresh_from_db()
    assert (job.status, job.last_error_class) == (JobStatus.FAILED, TOO_OFTEN)


def test_a_snooze_from_a_worker_that_lost_the_job_writes_nothing() -> None:
    Job.objects.enqueue(snooze, (60,))
    job = claim_one()
    outcome = execution.attempt(job, "w")
    assert outcome.failure is not None
    # Its lease ran out meanwhile: the rescue charged the attempt, and another worker claimed it.
    rescue_worker("w", WorkerLost("no heartbeat"))
    Job.objects.update(run_at=DatabaseNow())
    claim_one("other")
    written = finish(job, outcome.failure)
    assert not written
    job.refresh_from_db()
    assert (job.status, job.worker, job.attempts, job.snoozes) == (JobStatus.RUNNING, "other", 2, 0)
    assert job.last_error_class == "django_sqlqueue.exceptions.WorkerLost"


def test_snoozes_do_not_inflate_the_backoff_of_a_later_failure() -> None:
    """Oban's users found their snoozes counted as attempts, and their backoff grew with them."""
    job = Job.objects.enqueue(snooze_then_fail, (3,), max_attempts=3)
    assert run_jobs() == Ran(snoozed=3, retried=1)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.snoozes) == (JobStatus.READY, 1, 3)
    assert [error["attempt"] for error in job.errors] == [1]
    # The first retry's backoff (at most SQLQUEUE_RETRY_BACKOFF, 10 s), not the fourth's (40 s or more).
    assert job.run_at - db_now() <= datetime.timedelta(seconds=10)


def test_a_snooze_of_a_job_someone_asked_to_cancel_ends_it_cancelled() -> None:
    Job.objects.enqueue(snooze, (60,))
    job = claim_one()
    Job.objects.cancel([job.pk])
    job.refresh_from_db()  # as its worker learns with its heartbeat
    assert run_and_finish(job) == {"cancelled": 1}
    job.refresh_from_db()
    assert (job.status, job.snoozes) == (JobStatus.CANCELLED, 0)


def test_a_snoozed_job_keeps_its_unique_key() -> None:
    first = Job.objects.enqueue(sync_order, (7,))
    job = claim_one()
    finish(job, failures.decide(job, Snooze(60), "w"))
    again = Job.objects.enqueue(sync_order, (7,))
    assert again.pk == first.pk
    assert Job.objects.count() == 1


def test_admin_retry_gives_a_fresh_budget_of_snoozes() -> None:
    job = Job.objects.enqueue(noop)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, snoozes=2)
    Job.objects.retry([job])
    assert Job.objects.get(pk=job.pk).snoozes == 0


@override_settings(SQLQUEUE_MAX_SNOOZES=1)
def test_a_django_task_snoozes_and_its_signal_says_ready() -> None:
    results: list[Any] = []

    def heard(sender: Any, task_result: Any, **kwargs: Any) -> None:
        results.append(task_result)

    snooze_for.enqueue(30)
    task_finished.connect(heard)
    try:
        assert run_and_finish(claim_one()) == {"snoozed": 1}
        Job.objects.update(run_at=DatabaseNow())
        assert run_and_finish(claim_one()) == {"failed": 1}
    finally:
        task_finished.disconnect(heard)
    assert [result.status for result in results] == [TaskResultStatus.READY, TaskResultStatus.FAILED]
    job = Job.objects.get()
    assert (job.status, job.attempts, job.snoozes, job.last_error_class) == (JobStatus.FAILED, 1, 1, TOO_OFTEN)


@needs_task_options
def test_a_django_task_takes_its_own_max_snoozes() -> None:
    never = task(max_snoozes=0)(snooze_at_most_never)  # type: ignore[call-overload]
    assert never.max_snoozes == 0
    never.enqueue(5)
    assert run_and_finish(claim_one()) == {"failed": 1}
    assert Job.objects.get().last_error_class == TOO_OFTEN


def test_a_max_snoozes_out_of_range_is_refused_when_the_task_is_registered() -> None:
    with pytest.raises(ImproperlyConfigured, match="max_snoozes must be an integer from 0 to 2147483647, not -1"):
        job(max_snoozes=-1)(snooze_at_most_never)
