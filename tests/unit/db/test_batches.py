"""Batches (``db/batches.py``): the jobs of ``Job.objects.batch()`` count down their
batch in their finish, the last one enqueues each callback once with the counts, jobs
added from inside the batch keep it open, and bad input writes nothing."""

from __future__ import annotations

import datetime
import functools
from typing import Any
from unittest.mock import ANY

import pytest
from django.db import DatabaseError, connections
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from django_sqlqueue import signals
from django_sqlqueue.db import batches, expiry, pruning, transient
from django_sqlqueue.db.building import HOOK_ERRORS
from django_sqlqueue.exceptions import InvalidJobError, UnknownTaskError, WorkerLost
from django_sqlqueue.maintenance.rescue import rescue_worker
from django_sqlqueue.maintenance.services import maintenance_services
from django_sqlqueue.models import Job, JobBatch, JobStatus
from django_sqlqueue.testing import run_jobs
from tests.support.racing import at_once
from tests.support.severed import needs_a_server, sever
from tests.testapp.models import Receipt
from tests.testapp.tasks import add, batch_done, fail, fan_out, noop, record

pytestmark = pytest.mark.django_db

WORKER = "w-batches"


def _callbacks(batch: JobBatch) -> dict[str, dict[str, Any]]:
    """Each callback job enqueued by ``batch``: its arguments, the ``batch`` it got among them."""
    batch.refresh_from_db()
    jobs = Job.objects.in_bulk([pk for pk in batch.callback_jobs.values() if isinstance(pk, int)])
    return {
        when: {"args": jobs[pk].args, **jobs[pk].kwargs}
        for when, pk in batch.callback_jobs.items()
        if isinstance(pk, int)
    }


def _batch(**callbacks: Any) -> Any:
    return Job.objects.batch(
        on_success=(batch_done, ("ok",)),
        on_failure=(batch_done, ("ko",)),
        on_finish=(batch_done, ("end",)),
        **callbacks,
    )


def test_the_last_finish_enqueues_on_success_and_on_finish_once_with_the_counts() -> None:
    with _batch(description="thumbnails") as batch:
        jobs = [Job.objects.enqueue(add, (n, n)) for n in range(3)]
    assert {job.batch_id for job in jobs} == {batch.pk}
    batch.refresh_from_db()
    assert (batch.total, batch.pending, batch.finished_at) == (3, 3, None)
    claimed = Job.objects.claim(worker_id=WORKER, limit=10)
    Job.objects.finish(worker_id=WORKER, succeeded=dict.fromkeys(claimed[:2], 0))
    batch.refresh_from_db()
    assert (batch.pending, batch.finished_at, batch.callback_jobs) == (1, None, {})
    Job.objects.finish(worker_id=WORKER, succeeded={claimed[2]: 0})
    counts = {"id": batch.pk, "description": "thumbnails", "total": 3, "succeeded": 3, "failed": 0}
    assert _callbacks(batch) == {
        "on_success": {"args": ["ok"], "batch": counts},
        "on_finish": {"args": ["end"], "batch": counts},
    }
    assert (batch.succeeded, batch.failed, batch.pending) == (3, 0, 0)
    assert batch.finished_at is not None
    run_jobs()
    assert Job.objects.get(pk=batch.callback_jobs["on_finish"]).result == counts
    assert sorted(Receipt.objects.values_list("token", "runs")) == [("end", 1), ("ok", 1)]


def test_a_job_failed_for_good_fires_on_failure_and_a_retry_does_not_count() -> None:
    with _batch() as batch:
        Job.objects.enqueue(fail, ("boom",), max_attempts=2)
        Job.objects.enqueue(noop)
    run_jobs()
    batch.refresh_from_db()
    assert batch.finished_at is None  # the failed one retries after its backoff
    run_jobs(scheduled=True)
    called = _callbacks(batch)
    assert set(called) == {"on_failure", "on_finish"}
    assert called["on_failure"]["batch"] | {"id": 0} == {
        "id": 0,
        "description": "",
        "total": 2,
        "succeeded": 1,
        "failed": 1,
    }


PAST = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)


def _finish(job: Job, error: BaseException | None = None) -> None:
    """Claim ``job`` and finish it: succeeded, or failed with ``error``."""
    (claimed,) = Job.objects.claim(worker_id=WORKER, filter=Q(pk=job.pk))
    if error is None:
        Job.objects.finish(worker_id=WORKER, succeeded={claimed: None})
    else:
        Job.objects.finish(worker_id=WORKER, failed={claimed: error})


def _failed_at_once(batch: JobBatch, failed: int = 1, total: int = 2) -> None:
    """``batch`` finished as the path that ended its last job committed (no sweep ran):
    ``on_failure`` and ``on_finish`` enqueued once, with ``failed`` of ``total``."""
    called = _callbacks(batch)
    assert set(called) == {"on_failure", "on_finish"}
    assert (called["on_finish"]["batch"]["total"], called["on_finish"]["batch"]["failed"]) == (total, failed)
    assert (batch.pending, batch.failed) == (0, failed)
    assert Job.objects.filter(task="tests.testapp.tasks.batch_done").count() == 2
    assert batches.sweep(Job, "default") == 0


def test_cancelling_the_last_unfinished_job_completes_the_batch_at_once() -> None:
    with _batch() as batch:
        first, last = Job.objects.enqueue(noop), Job.objects.enqueue(noop)
    _finish(first)
    batch.refresh_from_db()
    assert (batch.pending, batch.finished_at) == (1, None)
    assert Job.objects.cancel([last.pk]).cancelled == 1
    _failed_at_once(batch)
    assert Job.objects.cancel([last.pk]).cancelled == 0  # once
    _failed_at_once(batch)


def test_cancelling_a_job_that_is_not_the_last_only_counts_it() -> None:
    with _batch() as batch:
        cancelled = Job.objects.enqueue(noop)
        Job.objects.enqueue(noop)
    Job.objects.cancel([cancelled.pk])
    batch.refresh_from_db()
    assert (batch.pending, batch.finished_at) == (1, None)
    run_jobs()
    _failed_at_once(batch)


@pytest.mark.parametrize("told", [False, True], ids=["plain", "with a receiver"])
def test_expiring_the_last_unfinished_job_completes_the_batch_at_once(
    told: bool, django_capture_on_commit_callbacks: Any
) -> None:
    heard: list[int] = []
    receiver = lambda sender, job, **named: heard.append(job.pk)  # noqa: E731
    with _batch() as batch:
        done = Job.objects.enqueue(noop)
        expired = Job.objects.enqueue(noop, expires_at=PAST)
    _finish(done)
    if told:
        signals.job_expired.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            assert Job.objects.expire() == 1
    finally:
        signals.job_expired.disconnect(receiver)
    assert heard == ([expired.pk] if told else [])
    _failed_at_once(batch)


def test_two_expiry_sweeps_ending_the_last_job_complete_the_batch_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with _batch() as batch:
        Job.objects.enqueue(noop, expires_at=PAST)
    real = transient.retry_transient
    other: list[int] = []

    def other_leader_first(*args: Any, **kwargs: Any) -> Any:
        # Another leader ends the same job between this one's read and its UPDATE.
        monkeypatch.setattr(expiry, "retry_transient", real)
        other.append(Job.objects.expire())
        return real(*args, **kwargs)

    monkeypatch.setattr(expiry, "retry_transient", other_leader_first)
    assert (Job.objects.expire(), other) == (0, [1])
    _failed_at_once(batch, total=1)


def test_a_claim_between_the_expirys_read_and_its_update_leaves_the_batch_to_the_finish(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _batch() as batch:
        late = Job.objects.enqueue(noop, expires_at=PAST)
    real = transient.retry_transient

    def claimed_first(*args: Any, **kwargs: Any) -> Any:
        # A claim that checked the deadline just before it passed commits between the
        # expiry's read and its UPDATE, which then finds the job RUNNING.
        claim = {"status": JobStatus.RUNNING, "worker": WORKER, "attempts": 1, "started_at": PAST}
        Job.objects.filter(pk=late.pk).update(**claim)
        return real(*args, **kwargs)

    monkeypatch.setattr(expiry, "retry_transient", claimed_first)
    assert Job.objects.expire() == 0
    batch.refresh_from_db()
    assert (batch.pending, batch.finished_at) == (1, None)
    Job.objects.finish(worker_id=WORKER, succeeded={Job.objects.get(pk=late.pk): None})
    assert set(_callbacks(batch)) == {"on_success", "on_finish"}


def test_a_dependent_cancelled_last_completes_its_batch_at_once() -> None:
    parent = Job.objects.enqueue(noop)  # in no batch
    with _batch() as batch:
        done = Job.objects.enqueue(noop)
        Job.objects.enqueue(noop, after=[parent])
    _finish(done)
    Job.objects.cancel([parent.pk])
    _failed_at_once(batch)


def test_a_dependent_its_batchs_failed_job_cancels_completes_the_batch_in_that_finish() -> None:
    with _batch() as batch:
        parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
        Job.objects.enqueue(noop, after=[parent])
    _finish(parent, RuntimeError("boom"))
    _failed_at_once(batch, failed=2)


def test_a_claimed_job_given_back_after_a_cancel_request_completes_its_batch() -> None:
    with _batch() as batch:
        Job.objects.enqueue(noop)
    (claimed,) = Job.objects.claim(worker_id=WORKER, limit=1)
    assert Job.objects.cancel([claimed.pk]).requested == 1
    assert Job.objects.release(worker_id=WORKER, unstarted=[claimed]) == 1
    _failed_at_once(batch, total=1)


def test_a_deleted_job_is_left_to_the_sweep() -> None:
    with _batch() as batch:
        gone = Job.objects.enqueue(noop)
    Job.objects.filter(pk=gone.pk).delete()
    assert batches.sweep(Job, "default") == 1
    assert batches.sweep(Job, "default") == 0
    assert _callbacks(batch)["on_failure"]["batch"]["failed"] == 1


def test_a_plain_cancel_and_expiry_read_no_batch() -> None:
    ready, running = Job.objects.enqueue(noop), Job.objects.enqueue(noop)
    Job.objects.enqueue(noop, expires_at=PAST)
    Job.objects.claim(worker_id=WORKER, filter=Q(pk=running.pk))
    with CaptureQueriesContext(connections["default"]) as captured:
        assert Job.objects.cancel([ready.pk, running.pk]) == (1, 1)
        assert Job.objects.expire() == 1
    # As before batches: the cancel's UPDATE, the cancel request's UPDATE, its read of
    # what waits for the jobs (now with their batches); the expiry's read and UPDATE.
    statements = [query["sql"].split()[0] for query in captured]
    assert [verb for verb in statements if verb in ("SELECT", "UPDATE")] == [
        *("UPDATE", "UPDATE", "SELECT"),
        *("SELECT", "UPDATE"),
    ]
    assert not [query for query in captured if "jobbatch" in query["sql"]]


def test_jobs_added_from_inside_a_batch_job_keep_it_open_until_they_finish() -> None:
    with _batch() as batch:
        Job.objects.enqueue(fan_out, ("parent", 3))
    run_jobs()
    batch.refresh_from_db()
    assert (batch.total, batch.succeeded, batch.failed) == (4, 4, 0)
    assert Receipt.objects.filter(token__startswith="parent").count() == 4
    assert Receipt.objects.get(token="ok").runs == 1


def test_an_empty_batch_finishes_as_its_block_ends() -> None:
    with _batch() as batch:
        pass
    assert batch.finished_at is not None
    assert set(_callbacks(batch)) == {"on_success", "on_finish"}


def test_an_exception_in_the_block_writes_neither_batch_nor_jobs() -> None:
    def enqueue_then_raise() -> None:
        with _batch():
            Job.objects.enqueue(noop)
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        enqueue_then_raise()
    assert not JobBatch.objects.exists()
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("callbacks", "message"),
    [
        ({"on_success": "no.such.task"}, "on_success: "),
        ({"on_failure": (batch_done, ("a", "b"))}, "on_failure (tests.testapp.tasks.batch_done): "),
        ({"on_finish": (record, ["x"])}, "called with its arguments and batch="),
        ({"on_finish": (batch_done, (), {"batch": 1})}, "which the batch passes itself"),
        ({"on_finish": (batch_done, (object(),))}, "args[0]"),
        ({"on_finish": 42}, "on_finish must be a registered task"),
        ({"description": "x" * 300}, "more than 255"),
    ],
)
def test_bad_callbacks_are_refused_before_anything_is_written(callbacks: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidJobError, match=None) as raised, Job.objects.batch(**callbacks):
        pytest.fail("the block must not run")
    assert message in str(raised.value)
    assert not str(raised.value).endswith("..")
    assert not JobBatch.objects.exists()


def test_a_finished_or_missing_batch_refuses_new_jobs() -> None:
    with Job.objects.batch() as batch:
        pass
    with pytest.raises(InvalidJobError, match=f"Batch {batch.pk} has finished"):
        Job.objects.enqueue(noop, batch=batch)
    with pytest.raises(InvalidJobError, match="do not exist: 999999"):
        Job.objects.enqueue(noop, batch=999999)
    with pytest.raises(InvalidJobError, match="must be a saved JobBatch or its id"):
        Job.objects.enqueue(noop, batch="1")
    assert not Job.objects.exists()


def test_enqueue_rows_refuses_to_run_inside_a_batch() -> None:
    with pytest.raises(InvalidJobError, match="use enqueue_many"), Job.objects.batch():
        Job.objects.enqueue_rows([(noop, (), {})])


def test_a_finish_that_lost_its_fence_counts_nothing() -> None:
    with _batch() as batch:
        Job.objects.enqueue(noop)
    (claimed,) = Job.objects.claim(worker_id=WORKER, limit=1)
    Job.objects.filter(pk=claimed.pk).update(status=JobStatus.READY, worker="")  # as the rescue does
    assert Job.objects.finish(worker_id=WORKER, succeeded={claimed: None}) == 0
    batch.refresh_from_db()
    assert (batch.pending, batch.finished_at) == (1, None)


def test_a_finish_that_fails_midway_rolls_its_count_back(monkeypatch: pytest.MonkeyPatch) -> None:
    with _batch() as batch:
        Job.objects.enqueue(noop)
    (claimed,) = Job.objects.claim(worker_id=WORKER, limit=1)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("killed mid-finish")

    monkeypatch.setattr(batches, "_enqueue_callbacks", broken)
    with pytest.raises(ConnectionError):
        Job.objects.finish(worker_id=WORKER, succeeded={claimed: None})
    batch.refresh_from_db()
    assert (batch.pending, batch.finished_at) == (1, None)
    assert Job.objects.get(pk=claimed.pk).status == JobStatus.RUNNING
    monkeypatch.undo()
    Job.objects.finish(worker_id=WORKER, succeeded={claimed: None})
    assert set(_callbacks(batch)) == {"on_success", "on_finish"}


def test_a_callback_unregistered_since_is_logged_and_the_batch_still_finishes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with _batch() as batch:
        Job.objects.enqueue(noop)
    JobBatch.objects.filter(pk=batch.pk).update(
        callbacks={"on_finish": {"task": "gone.task", "args": [], "kwargs": {}}}
    )
    run_jobs()
    batch.refresh_from_db()
    assert batch.finished_at is not None
    assert batch.callback_jobs["on_finish"].startswith("not enqueued: ")
    assert "its on_finish callback could not be enqueued" in caplog.text
    assert UnknownTaskError.__name__  # the error it logged


def test_retention_zero_counts_successes_deleted_at_once(settings: Any) -> None:
    settings.SQLQUEUE_RETENTION = {"SUCCESSFUL": 0}
    with _batch() as batch:
        Job.objects.enqueue_many([Job.objects.build(noop) for _ in range(3)])
    run_jobs()
    batch.refresh_from_db()
    assert (batch.succeeded_unkept, batch.succeeded, batch.failed) == (3, 3, 0)


def test_pruning_keeps_the_jobs_of_an_unfinished_batch() -> None:
    with _batch() as batch:
        done = Job.objects.enqueue(noop)
        Job.objects.enqueue(noop, run_at=datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc))
    Job.objects.filter(pk=done.pk).update(status=JobStatus.SUCCESSFUL)
    assert list(Job.objects.filter(batches.prunable()).values_list("pk", flat=True)) == []
    JobBatch.objects.filter(pk=batch.pk).update(finished_at=batch.created_at)
    assert Job.objects.filter(batches.prunable()).count() == 2


def test_the_maintenance_services_sweep_batches() -> None:
    assert "batches" in [service.name for service in maintenance_services(lambda rescued: None)]


def test_a_plain_finish_reads_no_batch() -> None:
    Job.objects.enqueue(noop)
    Job.objects.enqueue(noop)
    first, second = Job.objects.claim(worker_id=WORKER, limit=2)
    Job.objects.finish(worker_id=WORKER, succeeded={first: None})
    with CaptureQueriesContext(connections["default"]) as captured:
        Job.objects.finish(worker_id=WORKER, succeeded={second: None})
    # The fenced UPDATE, then the links' "any unsettled?" read (a job linked meanwhile),
    # as before batches; the read before it is spared while no workflow is under way.
    statements = [query["sql"].split()[0] for query in captured]
    assert [verb for verb in statements if verb in ("SELECT", "UPDATE")] == ["UPDATE", "SELECT"]
    assert not [query for query in captured if "jobbatch" in query["sql"]]


def _finish_one(jobs: tuple[Job, Job], fails: bool, index: int) -> int:
    """Finish ``jobs[index]`` as worker ``racer-<index>`` held it: the second fails when ``fails``."""
    if index == 1 and fails:
        return Job.objects.finish(worker_id="racer-1", failed={jobs[1]: RuntimeError("boom")})
    return Job.objects.finish(worker_id=f"racer-{index}", succeeded={jobs[index]: None})


@pytest.mark.django_db(transaction=True)
def test_two_last_jobs_finishing_at_once_on_two_connections_enqueue_the_callbacks_once() -> None:
    for round_ in range(20):
        with _batch() as batch:
            one, two = Job.objects.enqueue(noop), Job.objects.enqueue(noop, max_attempts=1)
        (first,) = Job.objects.claim(worker_id="racer-0", filter=Q(pk=one.pk))
        (second,) = Job.objects.claim(worker_id="racer-1", filter=Q(pk=two.pk))
        fails = round_ % 4 == 3

        finish = functools.partial(_finish_one, (first, second), fails)
        assert at_once(2, finish) == [1, 1]
        called = _callbacks(batch)
        assert set(called) == ({"on_failure", "on_finish"} if fails else {"on_success", "on_finish"})
        assert (batch.pending, batch.succeeded, batch.failed) == (0, 2 - fails, int(fails))
        assert Job.objects.filter(task="tests.testapp.tasks.batch_done").count() == 2 * (round_ + 1)


def _finish_crosswise(held: list[dict[Job, None]], index: int) -> int:
    """Finish the jobs ``held[index]`` as worker ``racer-<index>`` holds them."""
    return Job.objects.finish(worker_id=f"racer-{index}", succeeded=held[index])


@pytest.mark.django_db(transaction=True)
def test_two_finishes_each_ending_two_batches_crosswise_at_once_neither_deadlock_nor_double() -> None:
    """Each finish counts down both batches, its jobs named in the other's order: the
    batch rows are locked in id order whatever the finish's order, so neither waits for
    the other for ever (PostgreSQL and MariaDB would end one with a deadlock error)."""
    for round_ in range(10):
        made, jobs = [], []
        for _ in range(2):
            with _batch() as batch:
                jobs.append(Job.objects.enqueue_many([Job.objects.build(noop) for _ in range(2)]))
            made.append(batch)
        (a1, a2), (b1, b2) = jobs
        held = []
        for index, ordered in enumerate([(a1, b1), (b2, a2)]):  # the second in the other order
            pks = [job.pk for job in ordered]
            claimed = {job.pk: job for job in Job.objects.claim(worker_id=f"racer-{index}", filter=Q(pk__in=pks))}
            held.append({claimed[pk]: None for pk in pks})
        assert at_once(2, functools.partial(_finish_crosswise, held)) == [2, 2]
        for batch in made:
            assert set(_callbacks(batch)) == {"on_success", "on_finish"}
            assert (batch.pending, batch.succeeded, batch.failed) == (0, 2, 0)
        assert Job.objects.filter(task="tests.testapp.tasks.batch_done").count() == 4 * (round_ + 1)


def test_pruning_deletes_a_finished_batch_with_its_last_job_never_before() -> None:
    with _batch() as batch:
        Job.objects.enqueue_many([Job.objects.build(noop) for _ in range(2)])
    with Job.objects.batch() as open_one:
        Job.objects.enqueue(noop, run_at=datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc))
    run_jobs()
    everything = {status: datetime.timedelta(0) for status in (JobStatus.SUCCESSFUL, JobStatus.FAILED)}
    Job.objects.filter(batch_id=batch.pk).update(
        finished_at=datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    )
    assert batches.forget_finished(Job, "default", 100) == 0  # its jobs are still there
    pruned = pruning.prune(Job.objects.filter(batch_id=batch.pk), everything)
    assert (pruned.deleted[JobStatus.SUCCESSFUL], pruned.batches) == (2, 1)
    assert list(JobBatch.objects.values_list("pk", flat=True)) == [open_one.pk]  # open: kept


def _cancel_or_finish(jobs: tuple[Job, Job], index: int) -> int:
    """Finish ``jobs[0]`` as worker ``racer-0`` held it, or cancel ``jobs[1]``."""
    if index == 0:
        return Job.objects.finish(worker_id="racer-0", succeeded={jobs[0]: None})
    return Job.objects.cancel([jobs[1].pk]).cancelled


@pytest.mark.django_db(transaction=True)
def test_a_cancel_racing_the_last_finish_on_another_connection_enqueues_the_callbacks_once() -> None:
    for round_ in range(20):
        with _batch() as batch:
            one, two = Job.objects.enqueue(noop), Job.objects.enqueue(noop)
        (first,) = Job.objects.claim(worker_id="racer-0", filter=Q(pk=one.pk))
        assert at_once(2, functools.partial(_cancel_or_finish, (first, two))) == [1, 1]
        assert set(_callbacks(batch)) == {"on_failure", "on_finish"}
        assert (batch.pending, batch.succeeded, batch.failed) == (0, 1, 1)
        assert Job.objects.filter(task="tests.testapp.tasks.batch_done").count() == 2 * (round_ + 1)


@needs_a_server
@pytest.mark.django_db(transaction=True)
def test_a_finish_whose_connection_drops_while_it_counts_its_batch_down_writes_nothing_and_its_retry_completes_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _batch() as batch:
        first, last = Job.objects.enqueue(noop), Job.objects.enqueue(noop)
    _finish(first)
    (claimed,) = Job.objects.claim(worker_id=WORKER, filter=Q(pk=last.pk))
    complete = batches.complete

    def severed_first(*args: Any) -> bool:
        sever()  # pending is counted down, the callbacks not yet enqueued
        return complete(*args)

    monkeypatch.setattr(batches, "complete", severed_first)
    with pytest.raises(DatabaseError):
        Job.objects.finish(worker_id=WORKER, succeeded={claimed: None})
    monkeypatch.setattr(batches, "complete", complete)
    batch.refresh_from_db()
    assert (batch.pending, batch.finished_at, batch.callback_jobs) == (1, None, {})
    assert Job.objects.get(pk=last.pk).status == JobStatus.RUNNING
    assert not Job.objects.filter(task="tests.testapp.tasks.batch_done").exists()
    assert Job.objects.finish(worker_id=WORKER, succeeded={claimed: None}) == 1  # a new connection
    assert set(_callbacks(batch)) == {"on_success", "on_finish"}
    assert batches.sweep(Job, "default") == 0
    assert Job.objects.filter(task="tests.testapp.tasks.batch_done").count() == 2


def test_an_enqueue_hook_raising_on_a_callback_leaves_the_finish_written_and_enqueues_the_callback_without_it(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A hook for web requests raises on the callbacks the last finish enqueues: the
    finish is written, the batch finished, and each callback enqueued as if the hook
    had not run (none of its changes), the hook's exception logged with its name."""
    with _batch() as batch:
        jobs = [Job.objects.enqueue(add, (n, n)) for n in range(2)]
    settings.SQLQUEUE_ENQUEUE_HOOKS = ["tests.support.middleware.request_scoped"]
    claimed = Job.objects.claim(worker_id=WORKER, limit=10)
    Job.objects.finish(worker_id=WORKER, succeeded=dict.fromkeys(claimed, 0))
    assert set(Job.objects.filter(pk__in=[job.pk for job in jobs]).values_list("status", flat=True)) == {
        JobStatus.SUCCESSFUL
    }
    batch.refresh_from_db()
    assert batch.finished_at is not None
    callbacks = Job.objects.filter(pk__in=batch.callback_jobs.values())
    # Recorded on each callback, where its admin page shows it.
    raised = {HOOK_ERRORS: [{"hook": "tests.support.middleware.request_scoped", "error": ANY}]}
    assert sorted((job.args, job.priority, job.meta) for job in callbacks) == [
        (["end"], 0, raised),
        (["ok"], 0, raised),
    ]
    meta = callbacks[0].meta
    assert meta is not None
    assert meta[HOOK_ERRORS][0]["error"].startswith("LookupError: <ContextVar name='tests_request_user'")
    assert (
        "SQLQUEUE_ENQUEUE_HOOKS: tests.support.middleware.request_scoped, given a tests.testapp.tasks.batch_done "
        "job the runner enqueues, raised"
    ) in caplog.text
    assert "the job is enqueued without that hook's changes" in caplog.text
    assert "LookupError" in caplog.text
    # The caller's own enqueue still gets what the hook raises.
    with pytest.raises(LookupError):
        Job.objects.enqueue(noop)


@pytest.mark.parametrize("token", ["nul", "unprintable"])
def test_a_hook_error_no_database_stores_as_it_is_is_recorded_as_a_failed_attempt_would_be(
    settings: Any, token: str
) -> None:
    """A hook's exception that holds a NUL (PostgreSQL refuses it in JSON), or whose
    ``__str__`` raises, is recorded on the callback as a failed attempt's message is:
    the finish and the callback are written all the same."""
    with Job.objects.batch(on_finish=(batch_done, (token,))) as batch:
        Job.objects.enqueue(add, (1, 1))
    settings.SQLQUEUE_ENQUEUE_HOOKS = ["tests.support.middleware.raising_badly"]
    claimed = Job.objects.claim(worker_id=WORKER, limit=10)
    Job.objects.finish(worker_id=WORKER, succeeded=dict.fromkeys(claimed, 2))
    batch.refresh_from_db()
    (callback,) = Job.objects.filter(pk__in=batch.callback_jobs.values())
    assert callback.meta is not None
    (record,) = callback.meta[HOOK_ERRORS]
    assert record["error"] in {
        "LookupError: no request\\x00 here",
        "Unprintable: <str() of this Unprintable raised RuntimeError>",
    }


def _expire_last(last: Job) -> None:
    Job.objects.filter(pk=last.pk).update(expires_at=PAST)
    assert Job.objects.expire() == 1


def _rescue_last(last: Job) -> None:
    (claimed,) = Job.objects.claim(worker_id="w-gone", filter=Q(pk=last.pk))
    Job.objects.filter(pk=claimed.pk).update(max_attempts=1)
    assert rescue_worker("w-gone", WorkerLost("gone")).count == 1


def _delete_last(last: Job) -> None:
    Job.objects.filter(pk=last.pk).delete()
    assert batches.sweep(Job, "default") == 1


@pytest.mark.parametrize(
    "end", [_expire_last, _rescue_last, _delete_last], ids=["the expiry sweep", "a rescue", "the batches' sweep"]
)
def test_an_enqueue_hook_raising_on_a_callback_fails_no_other_path_that_completes_a_batch(
    end: Any, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with _batch() as batch:
        done, last = Job.objects.enqueue(noop), Job.objects.enqueue(noop)
    _finish(done)
    settings.SQLQUEUE_ENQUEUE_HOOKS = ["tests.support.middleware.request_scoped"]
    end(last)
    _failed_at_once(batch)
    assert Job.objects.get(pk=done.pk).status == JobStatus.SUCCESSFUL
    assert caplog.text.count("SQLQUEUE_ENQUEUE_HOOKS: tests.support.middleware.request_scoped") == 2
