"""Giving back the jobs of dead workers (``maintenance/rescue.py``)."""

from __future__ import annotations

import datetime
from collections import Counter

import pytest
from django.db.models import F

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.exceptions import WorkerLost
from django_sqlqueue.maintenance.rescue import Rescued, rescue_expired, rescue_worker
from django_sqlqueue.models import Job, JobStatus, Worker
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db

WORKER_LOST = "django_sqlqueue.exceptions.WorkerLost"


def hold(worker: str, count: int, **options: object) -> list[Job]:
    """``count`` jobs claimed by ``worker``."""
    Job.objects.enqueue_many(Job.objects.build(noop, (n,), **options) for n in range(count))  # type: ignore[arg-type]
    return list(Job.objects.claim(worker_id=worker, limit=count))


def register(name: str, *, seconds_ago: float = 0) -> None:
    worker = Worker.objects.create(name=name, host="h", pid=1)
    Worker.objects.filter(pk=worker.pk).update(heartbeat_at=F("heartbeat_at") - datetime.timedelta(seconds=seconds_ago))


def test_expired_worker_jobs_go_back_with_the_rescue_recorded() -> None:
    register("dead", seconds_ago=120)
    held = hold("dead", 2)
    assert rescue_expired() == Rescued(Counter({"retried": 2}))
    for job in Job.objects.filter(pk__in=[job.pk for job in held]):
        assert (job.status, job.attempts) == (JobStatus.READY, 1)
        assert [error["exception_class_path"] for error in job.errors] == [WORKER_LOST]
        assert "sent no heartbeat" in job.errors[0]["message"]
        assert job.errors[0]["worker"] == "dead"
    assert not Worker.objects.filter(name="dead").exists()


def test_a_rescue_that_ends_a_batchs_last_job_completes_the_batch_in_its_own_finish() -> None:
    register("dead", seconds_ago=120)
    with Job.objects.batch(on_failure=noop) as batch:
        hold("dead", 1, max_attempts=1)
    with Job.objects.batch(on_failure=noop) as open_one:  # its job is given back unstarted
        hold("dead", 1)
    assert rescue_worker(
        "dead", WorkerLost("gone"), started=set(Job.objects.filter(batch_id=batch.pk).values_list("pk", flat=True))
    ) == Rescued(Counter({"failed": 1}), 1)
    batch.refresh_from_db()
    open_one.refresh_from_db()
    assert (batch.failed, set(batch.callback_jobs), open_one.finished_at) == (1, {"on_failure"}, None)


def test_expired_worker_job_with_attempts_spent_fails() -> None:
    register("dead", seconds_ago=120)
    [job] = hold("dead", 1, max_attempts=1)
    assert rescue_expired() == Rescued(Counter({"failed": 1}))
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.FAILED, 1)
    assert job.finished_at is not None


def test_live_worker_keeps_its_jobs() -> None:
    register("alive", seconds_ago=1)
    held = hold("alive", 3)
    assert rescue_expired() == Rescued()
    assert set(Job.objects.values_list("status", "worker")) == {(JobStatus.RUNNING, "alive")}
    assert Job.objects.finish(worker_id="alive", succeeded=dict.fromkeys(held)) == 3


def test_rescued_job_cannot_be_finished_by_its_old_owner() -> None:
    register("dead", seconds_ago=120)
    [job] = hold("dead", 1)
    rescue_expired()
    Job.objects.filter(pk=job.pk).update(run_at=DatabaseNow())  # its retry is due
    [again] = Job.objects.claim(worker_id="new")
    assert again.pk == job.pk
    assert Job.objects.finish(worker_id="dead", succeeded={job: "stale"}) == 0
    assert Job.objects.finish(worker_id="new", succeeded={again: "fresh"}) == 1
    job.refresh_from_db()
    assert (job.status, job.result, job.worker) == (JobStatus.SUCCESSFUL, "fresh", "new")


def test_jobs_of_an_unregistered_worker_are_rescued_once_past_the_lease() -> None:
    [old] = hold("vanished", 1)
    Job.objects.filter(pk=old.pk).update(started_at=F("started_at") - datetime.timedelta(seconds=120))
    [recent] = hold("vanished-too", 1)
    assert rescue_expired() == Rescued(Counter({"retried": 1}))
    old.refresh_from_db()
    recent.refresh_from_db()
    assert (old.status, recent.status) == (JobStatus.READY, JobStatus.RUNNING)
    assert "not registered" in old.errors[0]["message"]


def test_rescue_worker_fails_started_jobs_and_releases_the_others() -> None:
    started, unstarted = hold("crashed", 2)
    rescued = rescue_worker("crashed", WorkerLost("gone"), started={started.pk})
    assert rescued == Rescued(Counter({"retried": 1}), released=1)
    assert rescued.count == 2
    started.refresh_from_db()
    unstarted.refresh_from_db()
    assert (started.status, started.attempts, started.errors[0]["message"]) == (JobStatus.READY, 1, "gone")
    assert (unstarted.status, unstarted.attempts, unstarted.errors) == (JobStatus.READY, 0, [])


def test_a_rescued_job_someone_asked_to_cancel_is_cancelled_not_ready() -> None:
    register("dead", seconds_ago=120)
    cancelled, kept = hold("dead", 2, max_attempts=3)
    assert Job.objects.cancel([cancelled.pk]) == (0, 1)
    assert rescue_expired() == Rescued(Counter({"cancelled": 1, "retried": 1}))
    cancelled.refresh_from_db()
    kept.refresh_from_db()
    assert (cancelled.status, cancelled.finished_at is not None) == (JobStatus.CANCELLED, True)
    assert kept.status == JobStatus.READY


def test_an_unstarted_job_someone_asked_to_cancel_is_cancelled_when_given_back() -> None:
    [job] = hold("w", 1)
    Job.objects.cancel([job.pk])
    assert rescue_worker("w", WorkerLost("gone"), started=set()) == Rescued(released=1)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.finished_at is not None) == (JobStatus.CANCELLED, 0, True)
