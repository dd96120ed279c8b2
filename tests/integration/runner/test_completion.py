"""Transactional completion (``@job(atomic=True)``, ``complete_in_transaction()``) run
in the test's process, as ``django_sqlqueue.testing`` runs a job: the task's writes and
its success commit together, or neither does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import F

from django_sqlqueue import job, signals
from django_sqlqueue.backends.compat import task
from django_sqlqueue.exceptions import InvalidJobError, JobTakenAway
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.runner.execution import attempt
from django_sqlqueue.testing import WORKER_ID, perform, run_jobs
from tests.djtasks import tasks as djtasks
from tests.support.task_options import needs_task_options
from tests.testapp.models import Receipt
from tests.testapp.tasks import (
    atomic_on_replica,
    complete_outside_transaction,
    record,
    record_and_complete,
    record_atomically,
    record_atomically_then_fail,
    record_atomically_unstorable,
)

pytestmark = pytest.mark.django_db


def receipts() -> dict[str, int]:
    return dict(Receipt.objects.values_list("token", "runs"))


def the_job() -> Job:
    return Job.objects.get()


def last_error(job: Job) -> str:
    return str(job.errors[-1]["exception_class_path"])


def test_an_atomic_task_commits_its_writes_with_its_success() -> None:
    assert perform(record_atomically, "a", result={"n": [1, 2]}) == {"n": [1, 2]}
    assert receipts() == {"a": 1}
    assert (the_job().status, the_job().result) == (JobStatus.SUCCESSFUL, {"n": [1, 2]})


def test_an_atomic_task_that_raises_rolls_back_its_writes_and_fails_on_its_own() -> None:
    with pytest.raises(ValueError, match="no"):
        perform(record_atomically_then_fail, "a", "no")
    assert receipts() == {}
    assert the_job().status == JobStatus.FAILED
    assert last_error(the_job()) == "builtins.ValueError"


def test_an_atomic_task_whose_job_was_taken_away_rolls_back_its_writes() -> None:
    """The job's row moved on (rescued and claimed again) while the task ran: the fence
    keeps its success out, and the transaction with the task's writes rolls back."""
    Job.objects.enqueue(record_atomically, ("a",))
    (claimed,) = Job.objects.claim(worker_id=WORKER_ID, limit=1)
    Job.objects.filter(pk=claimed.pk).update(attempts=F("attempts") + 1)  # another attempt holds it now
    outcome = attempt(claimed, WORKER_ID)
    assert isinstance(outcome.error, JobTakenAway)
    assert outcome.written is None
    assert outcome.failure is not None
    assert receipts() == {}
    assert Job.objects.finish_as_decided(worker_id=WORKER_ID, succeeded={}, failed={claimed: outcome.failure}) == []
    assert the_job().status == JobStatus.RUNNING  # the other attempt's, untouched


def test_an_unstorable_result_rolls_back_the_writes() -> None:
    with pytest.raises(InvalidJobError, match="cannot be completed: the result is nan"):
        perform(record_atomically_unstorable, "a")
    assert receipts() == {}
    assert the_job().status == JobStatus.FAILED


def test_the_success_deletes_the_job_in_the_same_transaction_with_a_retention_of_zero(settings: Any) -> None:
    settings.SQLQUEUE_RETENTION = {"SUCCESSFUL": 0}
    assert perform(record_atomically, "a", result=7) == 7
    assert receipts() == {"a": 1}
    assert not Job.objects.exists()


def test_a_workflow_child_is_released_by_its_atomic_parent() -> None:
    parent = Job.objects.enqueue(record_atomically, ("parent",), {"result": "p"})
    child = Job.objects.enqueue(record, ("child",), after=[parent])
    assert Job.objects.get(pk=child.pk).status == JobStatus.WAITING
    ran = run_jobs()
    assert ran.succeeded == 2
    assert receipts() == {"parent": 1, "child": 1}


def test_a_task_completes_its_job_inside_its_own_transaction() -> None:
    assert perform(record_and_complete, "a") == {"token": "a"}  # the result it completed with
    assert receipts() == {"a": 1}
    assert the_job().errors == []


def test_a_task_that_raises_after_its_completion_committed_stays_successful(caplog: Any) -> None:
    assert perform(record_and_complete, "a", then="raise") == {"token": "a"}
    assert the_job().status == JobStatus.SUCCESSFUL
    assert "raised RuntimeError after its completion was committed" in caplog.text


def test_a_completion_rolled_back_with_its_transaction_leaves_the_finish_to_the_worker() -> None:
    assert perform(record_and_complete, "a", then="rollback") == "rolled back"
    assert receipts() == {}
    assert (the_job().status, the_job().result) == (JobStatus.SUCCESSFUL, "rolled back")


def test_completing_twice_is_refused_and_rolls_back() -> None:
    with pytest.raises(RuntimeError, match="already completed"):
        perform(record_and_complete, "a", then="twice")
    assert receipts() == {}
    assert the_job().status == JobStatus.FAILED


@pytest.mark.django_db(transaction=True)
def test_completing_outside_a_transaction_is_refused() -> None:
    with pytest.raises(Exception, match=r"inside transaction\.atomic"):
        perform(complete_outside_transaction)
    assert the_job().status == JobStatus.FAILED
    assert last_error(the_job()) == "django.db.transaction.TransactionManagementError"


@pytest.fixture
def seen_in_transaction() -> Iterator[list[tuple[str, bool]]]:
    """What was sent, and whether the jobs' connection was inside a transaction then."""
    seen: list[tuple[str, bool]] = []

    def receiver(name: str) -> Callable[..., None]:
        def receive(**kwargs: Any) -> None:
            seen.append((name, connection.in_atomic_block))

        return receive

    receivers = {"succeeded": receiver("job_succeeded"), "finished": receiver("job_finished")}
    signals.job_succeeded.connect(receivers["succeeded"], weak=False)
    signals.job_finished.connect(receivers["finished"], weak=False)
    yield seen
    signals.job_succeeded.disconnect(receivers["succeeded"])
    signals.job_finished.disconnect(receivers["finished"])


def in_transaction_middleware(get_result: Callable[[Job], Any]) -> Callable[[Job], Any]:
    def handler(job: Job) -> Any:
        result = get_result(job)
        Receipt.objects.create(token=f"middleware saw a transaction: {connection.in_atomic_block}")
        return result

    return handler


@pytest.mark.django_db(transaction=True)
def test_signals_and_middleware_come_after_the_commit(seen_in_transaction: list[Any], settings: Any) -> None:
    settings.SQLQUEUE_MIDDLEWARE = [f"{__name__}.in_transaction_middleware"]
    perform(record_atomically, "a")
    assert sorted(seen_in_transaction) == [("job_finished", False), ("job_succeeded", False)]
    assert sorted(receipts()) == ["a", "middleware saw a transaction: False"]


@needs_task_options
def test_a_django_task_runs_atomically() -> None:
    atomically = task(atomic=True)(djtasks.record_atomically)  # type: ignore[call-overload]
    result = atomically.enqueue("a")
    run_jobs()
    result.refresh()
    assert (result.status.name, result.return_value) == ("SUCCESSFUL", "a")
    failing = atomically.enqueue("fail-b")
    run_jobs()
    assert receipts() == {"a": 1}
    assert last_error(Job.objects.get(pk=int(failing.id))) == "builtins.ValueError"  # to be retried


def test_a_task_that_writes_to_another_database_is_refused_at_enqueue() -> None:
    with pytest.raises(InvalidJobError, match=r"has @job\(atomic='replica'\).* its jobs are on 'default'"):
        Job.objects.enqueue(atomic_on_replica, ("a",))
    with pytest.raises(InvalidJobError, match="atomic='replica'"):
        Job.objects.enqueue_rows([(atomic_on_replica, ("a",), {})])
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("atomic", "problem"),
    [("nowhere", "names no database of settings.DATABASES"), (1, "must be True, False or a database alias")],
)
def test_registration_refuses_what_is_no_database(atomic: Any, problem: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=problem):
        job(atomic=atomic)(_never_registered)


def _never_registered() -> None:
    """What the refused ``@job(atomic=...)`` above would register."""
