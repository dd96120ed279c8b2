"""The job signals (``signals.py``): one per outcome of the state machine, each sent once
per job after the commit that wrote it, none for what the fence kept out or a rollback
undid, and a receiver that raises changes nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import transaction
from django.dispatch import Signal
from django.test import override_settings

from django_sqlqueue import signals, testing
from django_sqlqueue.db import dependencies
from django_sqlqueue.exceptions import WorkerLost
from django_sqlqueue.maintenance.rescue import rescue_worker
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.lifecycle import (
    CANCEL,
    CANCEL_DEPENDENT,
    FAIL,
    OUTCOMES,
    RELEASE_CANCELLED,
    RETRY,
    SNOOZE,
    SNOOZE_SPENT,
    SUCCEED,
    SUCCEED_AND_DELETE,
    TRANSITIONS,
    UNBLOCK,
)
from tests.testapp.tasks import add, fail, fail_once, noop, snooze, sync_order

Received = list[tuple[str, int, str, Any, Any]]


@pytest.fixture
def received() -> Iterator[Received]:
    """Every job signal but job_started and job_finished, as (name, job id, status written,
    transition name, result or error), in order."""
    got: Received = []

    def receiver(name: str) -> Callable[..., None]:
        def receive(sender: type[Job], *, job: Job, **named: Any) -> None:
            assert sender is Job
            transition = named.get("transition")
            error = named.get("error")
            got.append(
                (
                    name,
                    job.pk,
                    job.status,
                    transition and transition.name,
                    named.get("result") if error is None else type(error).__name__,
                )
            )

        return receive

    connected = {"enqueued": signals.job_enqueued, "unblocked": signals.job_unblocked, **signals.job_ended}
    receivers = {name: receiver(name) for name in connected}
    for name, signal in connected.items():
        signal.connect(receivers[name])
    yield got
    for name, signal in connected.items():
        signal.disconnect(receivers[name])


def test_every_outcome_of_the_state_machine_has_its_signal() -> None:
    assert list(signals.job_ended) == list(OUTCOMES)
    for outcome in OUTCOMES:
        assert getattr(signals, f"job_{outcome}") is signals.job_ended[outcome]


def test_every_transition_sends_its_signal_or_says_why_it_sends_none() -> None:
    """A new transition fails this until it is given a signal or a reason in ``SILENT``."""
    undecided = [
        name for name, made in TRANSITIONS.items() if signals.signal_of(made) is None and made not in signals.SILENT
    ]
    assert undecided == []
    both = [made.name for made in signals.SILENT if signals.signal_of(made) is not None]
    assert both == []
    assert set(signals.SILENT) | set(signals.SENT) <= set(TRANSITIONS.values())
    assert signals.signal_of(UNBLOCK) is signals.job_unblocked
    assert signals.signal_of(CANCEL_DEPENDENT) is signals.signal_of(RELEASE_CANCELLED) is signals.job_cancelled


@pytest.mark.django_db(transaction=True)
def test_enqueued_is_sent_once_the_job_commits_and_never_for_a_rollback(received: Received) -> None:
    with transaction.atomic():
        job = Job.objects.enqueue(add, [1, 2])
        assert received == []
    assert received == [("enqueued", job.pk, JobStatus.READY, None, None)]

    with transaction.atomic():
        Job.objects.enqueue(add, [3, 4])
        transaction.set_rollback(True)
    many = Job.objects.enqueue_many([Job.objects.build(add, [5, 6]), Job.objects.build(add, [7, 8])])
    assert received[1:] == [("enqueued", made.pk, JobStatus.READY, None, None) for made in many]


@pytest.mark.django_db(transaction=True)
def test_a_job_a_unique_key_kept_out_is_not_enqueued_again(received: Received) -> None:
    first = Job.objects.enqueue(sync_order, [7])
    again = Job.objects.enqueue(sync_order, [7])
    assert (again.pk, again.created) == (first.pk, False)
    assert received == [("enqueued", first.pk, JobStatus.READY, None, None)]


@pytest.mark.django_db(transaction=True)
def test_a_retried_then_successful_job_sends_each_signal_once(received: Received) -> None:
    job = Job.objects.enqueue(fail_once, ["once"])
    assert testing.run_jobs(scheduled=True) == testing.Ran(succeeded=1, retried=1)
    assert received == [
        ("enqueued", job.pk, JobStatus.READY, None, None),
        ("retried", job.pk, JobStatus.READY, RETRY.name, "RuntimeError"),
        ("succeeded", job.pk, JobStatus.SUCCESSFUL, SUCCEED.name, "once"),
    ]


@pytest.mark.django_db(transaction=True)
def test_each_snooze_sends_snoozed_once_and_the_one_past_max_snoozes_failed(received: Received) -> None:
    job = Job.objects.enqueue(snooze, [0])  # due again at once: run_jobs runs it until it fails
    received.clear()
    assert testing.run_jobs(scheduled=True) == testing.Ran(snoozed=2, failed=1)
    snoozed = ("snoozed", job.pk, JobStatus.READY, SNOOZE.name, "Snooze")
    assert received == [snoozed, snoozed, ("failed", job.pk, JobStatus.FAILED, SNOOZE_SPENT.name, "SnoozedTooOften")]
    assert signals.job_snoozed is signals.job_ended[SNOOZE.outcome]


@pytest.mark.django_db
def test_outcomes_are_sent_after_the_commit_that_wrote_them(
    received: Received, django_capture_on_commit_callbacks: Any
) -> None:
    Job.objects.enqueue(add, [1, 2], max_attempts=1)
    received.clear()  # its enqueue waits for the test's transaction, which never commits
    (job,) = Job.objects.claim(worker_id="worker-1")
    with django_capture_on_commit_callbacks() as callbacks:
        Job.objects.finish(worker_id="worker-1", failed={job: ValueError("boom")})
    assert received == []
    for callback in callbacks:
        callback()
    assert received == [("failed", job.pk, JobStatus.FAILED, FAIL.name, "ValueError")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kept", [None, 0])
def test_an_outcome_the_fence_kept_out_sends_nothing(received: Received, kept: int | None) -> None:
    """Of two jobs of a batch, the one rescued from its worker and claimed by another
    meanwhile sends nothing when its first worker writes its outcome; the other does
    (also when the success deletes it)."""
    kept_job, lost_job = Job.objects.enqueue(add, [1, 2]), Job.objects.enqueue(add, [3, 4])
    first, lost = Job.objects.claim(worker_id="worker-1", limit=2)
    Job.objects.filter(pk=lost.pk).update(worker="worker-2")  # as a rescue then a claim would leave it
    received.clear()
    with override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": kept}):
        assert Job.objects.finish(worker_id="worker-1", succeeded={first: 3, lost: 7}) == 1
    transition = SUCCEED if kept is None else SUCCEED_AND_DELETE
    assert received == [("succeeded", kept_job.pk, JobStatus.SUCCESSFUL, transition.name, 3)]
    assert lost_job.pk != kept_job.pk


@pytest.mark.django_db(transaction=True)
def test_a_rescue_sends_the_outcome_it_wrote(received: Received) -> None:
    job = Job.objects.enqueue(add, [1, 2])
    Job.objects.claim(worker_id="dead-worker")
    received.clear()
    rescue_worker("dead-worker", WorkerLost("gone"))
    assert received == [("retried", job.pk, JobStatus.READY, RETRY.name, "WorkerLost")]


@pytest.mark.django_db(transaction=True)
def test_a_receiver_that_raises_changes_nothing(received: Received, caplog: pytest.LogCaptureFixture) -> None:
    def broken(**named: Any) -> None:
        raise ValueError("a receiver's bug")

    signals.job_succeeded.connect(broken)
    signals.job_enqueued.connect(broken)
    try:
        job = Job.objects.enqueue(add, [1, 2])
        assert testing.run_jobs() == testing.Ran(succeeded=1)
    finally:
        signals.job_succeeded.disconnect(broken)
        signals.job_enqueued.disconnect(broken)
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.SUCCESSFUL, 3)
    # The other receivers got theirs; each failure is logged with its traceback.
    assert [name for name, *_ in received] == ["enqueued", "succeeded"]
    logged = [record for record in caplog.records if record.name == "django_sqlqueue.signals"]
    assert [(record.levelno, str(record.exc_info and record.exc_info[1])) for record in logged] == [
        (logging.ERROR, "a receiver's bug")
    ] * 2


@pytest.mark.django_db(transaction=True)
def test_a_ready_job_cancelled_sends_cancelled_once_and_a_running_one_nothing_yet(received: Received) -> None:
    ready, running = Job.objects.enqueue(add, [1, 2]), Job.objects.enqueue(add, [3, 4], priority=5)
    Job.objects.claim(worker_id="worker-1", limit=1)  # the higher priority: running
    received.clear()
    assert Job.objects.cancel([ready.pk, running.pk]) == (1, 1)
    assert Job.objects.cancel([ready.pk, running.pk]) == (0, 0)
    assert received == [("cancelled", ready.pk, JobStatus.CANCELLED, CANCEL.name, None)]


@pytest.mark.django_db(transaction=True)
def test_a_waiting_job_released_sends_unblocked_once_and_not_enqueued_again(received: Received) -> None:
    first, second = Job.objects.enqueue(add, [1, 2]), Job.objects.enqueue(add, [3, 4])
    child = Job.objects.enqueue(noop, after=[first, second])
    assert testing.run_jobs() == testing.Ran(succeeded=3)
    assert [row for row in received if row[1] == child.pk] == [
        ("enqueued", child.pk, JobStatus.WAITING, None, None),
        ("unblocked", child.pk, JobStatus.READY, None, None),
        ("succeeded", child.pk, JobStatus.SUCCESSFUL, SUCCEED.name, None),
    ]
    # Enqueued after jobs that had all finished: released in its enqueue's transaction.
    received.clear()
    late = Job.objects.enqueue(noop, after=[first])
    assert received == [
        ("enqueued", late.pk, JobStatus.READY, None, None),
        ("unblocked", late.pk, JobStatus.READY, None, None),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_dependent_of_a_failed_job_sends_cancelled_once_with_its_reason(received: Received) -> None:
    parent = Job.objects.enqueue(fail, ["down"], max_attempts=1)
    child = Job.objects.enqueue(noop, after=[parent])
    grandchild = Job.objects.enqueue(noop, after=[child])
    assert testing.run_jobs() == testing.Ran(failed=1)
    assert [row for row in received if row[0] != "enqueued"] == [
        ("failed", parent.pk, JobStatus.FAILED, FAIL.name, "RuntimeError"),
        ("cancelled", child.pk, JobStatus.CANCELLED, CANCEL_DEPENDENT.name, "DependencyFailed"),
        ("cancelled", grandchild.pk, JobStatus.CANCELLED, CANCEL_DEPENDENT.name, "DependencyFailed"),
    ]
    # The sweep finds nothing left to settle, and sends nothing.
    received.clear()
    assert dependencies.sweep(Job, "default") == 0
    assert received == []


@pytest.mark.django_db
def test_signals_of_a_dependents_cancel_are_sent_only_when_its_transaction_commits(
    received: Received, django_capture_on_commit_callbacks: Any
) -> None:
    parent = Job.objects.enqueue(add, [1, 2])
    child = Job.objects.enqueue(noop, after=[parent])
    with django_capture_on_commit_callbacks() as callbacks:
        Job.objects.cancel([parent.pk])
    assert received == []
    for callback in callbacks:
        callback()
    assert received == [
        ("cancelled", parent.pk, JobStatus.CANCELLED, CANCEL.name, None),
        ("cancelled", child.pk, JobStatus.CANCELLED, CANCEL_DEPENDENT.name, "DependencyFailed"),
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("by", ["stopping worker", "rescue"])
def test_a_job_given_back_unstarted_after_a_cancel_request_sends_cancelled_once(received: Received, by: str) -> None:
    asked, other = Job.objects.enqueue(add, [1, 2], priority=5), Job.objects.enqueue(add, [3, 4])
    claimed = list(Job.objects.claim(worker_id="worker-1", limit=2))
    assert Job.objects.cancel([asked.pk]) == (0, 1)
    received.clear()
    if by == "rescue":
        rescue_worker("worker-1", WorkerLost("gone"), started=set())
    else:
        assert Job.objects.release(worker_id="worker-1", unstarted=claimed) == 2
    assert Job.objects.release(worker_id="worker-1", unstarted=claimed) == 0
    assert received == [("cancelled", asked.pk, JobStatus.CANCELLED, RELEASE_CANCELLED.name, None)]
    assert Job.objects.get(pk=other.pk).status == JobStatus.READY


def test_a_signal_no_receiver_listens_to_is_not_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    def sent(self: Signal, sender: Any, **named: Any) -> list[Any]:
        raise AssertionError("sent with no receiver")

    nobody = Signal()
    monkeypatch.setattr(Signal, "send_robust", sent)
    signals.send(nobody, Job, "a job", job=None)  # the runner's two signals around every job


def test_a_signal_a_receiver_listens_to_is_sent() -> None:
    heard: list[Any] = []
    somebody = Signal()
    somebody.connect(lambda sender, **named: heard.append(named["job"]), weak=False)
    signals.send(somebody, Job, "a job", job="a job")
    assert heard == ["a job"]
