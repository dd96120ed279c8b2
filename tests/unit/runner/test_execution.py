"""Running claimed jobs in a worker (``execution.run``): ``@job`` functions, and Django
tasks with their context, coroutines and Django's signals."""

from __future__ import annotations

import datetime
import logging
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from django_sqlqueue import signals
from django_sqlqueue.admin import display
from django_sqlqueue.backends import SQLQueueBackend
from django_sqlqueue.backends.compat import TaskResult, TaskResultStatus, task_finished, task_started
from django_sqlqueue.exceptions import TransactionLeftOpen, UnknownTaskError
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.lifecycle import FAIL, RETRY, SUCCEED
from django_sqlqueue.runner import execution
from tests.djtasks.tasks import add, async_double, fail, whoami
from tests.testapp.models import Receipt
from tests.testapp.tasks import async_receipt, autocommit_left_off, raise_unprintable, report

pytestmark = pytest.mark.django_db

Sent = list[tuple[str, type, "TaskResult[..., Any]"]]


@pytest.fixture
def sent() -> Iterator[Sent]:
    """Django's task signals as the worker sends them, in order."""
    received: Sent = []

    def started(sender: type, task_result: TaskResult[..., Any], **kwargs: Any) -> None:
        received.append(("started", sender, task_result))

    def finished(sender: type, task_result: TaskResult[..., Any], **kwargs: Any) -> None:
        received.append(("finished", sender, task_result))

    task_started.connect(started)
    task_finished.connect(finished)
    yield received
    task_started.disconnect(started)
    task_finished.disconnect(finished)


def claim_one(worker: str = "worker-1") -> Job:
    (job,) = Job.objects.claim(worker_id=worker)
    return job


def test_a_job_task_is_called_with_its_arguments(sent: Sent) -> None:
    Job.objects.enqueue(report, ["monthly"])
    assert execution.run(claim_one(), "worker-1") == "monthly"
    assert sent == []


def test_a_django_task_runs_between_djangos_signals(sent: Sent) -> None:
    result = add.enqueue(2, 3)
    job = claim_one()

    assert execution.run(job, "worker-1") == 5

    assert [(name, sender) for name, sender, _ in sent] == [
        ("started", SQLQueueBackend),
        ("finished", SQLQueueBackend),
    ]
    started, finished = (task_result for _, _, task_result in sent)
    assert (started.id, started.status, started.worker_ids, started.started_at) == (
        result.id,
        TaskResultStatus.RUNNING,
        ["worker-1"],
        job.started_at,
    )
    assert (finished.status, finished.return_value, finished.attempts) == (TaskResultStatus.SUCCESSFUL, 5, 1)
    assert finished.finished_at is not None
    assert finished.task is add


def test_the_context_has_the_attempt_number() -> None:
    whoami.enqueue("again")
    Job.objects.finish(worker_id="worker-0", failed={claim_one("worker-0"): RuntimeError("first attempt")})
    Job.objects.update(run_at=timezone.now() - datetime.timedelta(hours=1))
    assert execution.run(claim_one(), "worker-1") == {"label": "again", "attempt": 2, "status": "RUNNING"}


def test_a_coroutine_function_runs_and_its_value_is_made_json() -> None:
    async_double.enqueue(4)
    assert execution.run(claim_one(), "worker-1") == [4, 8]


def test_an_async_job_function_runs_and_its_result_is_stored() -> None:
    # Before: "return value is a coroutine", retried until FAILED.
    Job.objects.enqueue(async_receipt, ["async"])
    job = claim_one()
    outcome = execution.attempt(job, "worker-1")
    assert outcome.error is None
    assert Job.objects.finish(worker_id="worker-1", succeeded={job: outcome.result}) == 1
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.SUCCESSFUL, {"attempt": 1, "receipts": 1})
    assert Receipt.objects.filter(token="async").count() == 1


@pytest.mark.django_db(transaction=True)  # autocommit, as in a worker
def test_a_task_that_returns_with_autocommit_off_fails_its_attempt() -> None:
    # Before: the worker closed the connection later, the receipt was rolled back and the job SUCCESSFUL.
    Job.objects.enqueue(autocommit_left_off, ["left"])
    job = claim_one()
    outcome = execution.attempt(job, "worker-1")
    assert isinstance(outcome.error, TransactionLeftOpen)
    assert str(outcome.error) == (
        "the task returned with autocommit off on database 'default' (set_autocommit(False) not undone): what it "
        "wrote since its last commit() was rolled back. Use transaction.atomic(), or commit() and "
        "set_autocommit(True) before returning."
    )
    assert connection.get_autocommit()
    assert not Receipt.objects.filter(token="left").exists()
    assert Job.objects.finish(worker_id="worker-1", failed={job: outcome.error}) == 1
    job.refresh_from_db()
    assert (job.status, job.last_error_class) == (
        JobStatus.READY,
        "django_sqlqueue.exceptions.TransactionLeftOpen",
    )


@pytest.mark.django_db(transaction=True)
def test_a_task_that_raises_with_autocommit_off_keeps_its_own_error() -> None:
    Job.objects.enqueue(autocommit_left_off, ["raised"], {"error": "its own"})
    outcome = execution.attempt(claim_one(), "worker-1")
    assert repr(outcome.error) == "ValueError('its own')"
    assert connection.get_autocommit()
    assert not Receipt.objects.filter(token="raised").exists()


def test_a_failed_attempt_is_retried_then_failed(sent: Sent, caplog: pytest.LogCaptureFixture) -> None:
    result = fail.enqueue("boom")
    Job.objects.update(max_attempts=2)

    for worker, status in (("worker-1", TaskResultStatus.READY), ("worker-2", TaskResultStatus.FAILED)):
        job = claim_one(worker)
        with pytest.raises(ValueError, match="boom") as excinfo:
            execution.run(job, worker)
        Job.objects.finish(worker_id=worker, failed={job: excinfo.value})
        Job.objects.update(run_at=timezone.now() - datetime.timedelta(hours=1))
        _, _, finished = sent[-1]
        assert (finished.status, finished.worker_ids) == (status, ["worker-1", "worker-2"][: job.attempts])
        assert [error.exception_class_path for error in finished.errors] == ["builtins.ValueError"] * job.attempts
        assert "raise ValueError(message)\nValueError: boom\n" in finished.errors[-1].traceback

    # What the worker announced is what it wrote (the stored traceback also has the frames the exception left through).
    result.refresh()
    assert (result.status, result.worker_ids, [error.exception_class for error in result.errors]) == (
        finished.status,
        finished.worker_ids,
        [ValueError, ValueError],
    )
    # Django's own task logging reports the failure with its traceback.
    (logged,) = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert logged.getMessage() == f"Task id={result.id} path=tests.djtasks.tasks.fail state=FAILED"
    assert logged.exc_info is not None
    assert logged.exc_info[1] is excinfo.value


def test_a_failing_receiver_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    def broken(**kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    add.enqueue(1, 1)
    task_finished.connect(broken)
    try:
        assert execution.run(claim_one(), "worker-1") == 2
    finally:
        task_finished.disconnect(broken)
    (logged,) = [record for record in caplog.records if record.name == "django_sqlqueue.signals"]
    assert logged.getMessage().endswith("of tests.djtasks.tasks.add raised")


def test_a_row_naming_an_unregistered_task_imports_nothing() -> None:
    Job.objects.create(task="tests.support.poison.run", max_attempts=1, queue="default")
    with pytest.raises(UnknownTaskError, match=re.escape("No task is registered as 'tests.support.poison.run'")):
        execution.run(claim_one(), "worker-1")
    assert "tests.support.poison" not in sys.modules


@pytest.mark.parametrize(
    ("max_attempts", "outcome", "level", "said"),
    [
        (1, FAIL.outcome, logging.ERROR, "attempt 1/1 failed after {:.3f} s, its last attempt; the job is FAILED"),
        (2, RETRY.outcome, logging.WARNING, "attempt 1/2 failed after {:.3f} s and will be retried"),
    ],
)
def test_an_attempt_is_logged_and_signalled_with_its_outcome_and_duration(
    max_attempts: int, outcome: str, level: int, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A failed attempt is a WARNING, and the last one an ERROR, so that both show at
    runworkers' default verbosity; the line says which attempt it was, of how many, and
    that its seconds are how long it ran (not when it is retried)."""
    received: list[dict[str, Any]] = []

    def finished(**kwargs: Any) -> None:
        received.append(kwargs)

    Job.objects.enqueue(report, ["ok"])
    fail.enqueue("boom")
    Job.objects.update(max_attempts=max_attempts)
    signals.job_finished.connect(finished)
    caplog.set_level(logging.INFO, "django_sqlqueue")
    try:
        for job in sorted(Job.objects.claim(worker_id="worker-1"), key=lambda job: job.pk):
            execution.attempt(job, "worker-1")
    finally:
        signals.job_finished.disconnect(finished)
    assert [(sent["job"].task, sent["outcome"]) for sent in received] == [
        ("tests.testapp.tasks.report", SUCCEED.outcome),
        ("tests.djtasks.tasks.fail", outcome),
    ]
    assert all(0 <= sent["duration"] < 60 for sent in received)
    logged = [record for record in caplog.records if record.name == "django_sqlqueue.runner.execution"]
    assert [(record.levelno, record.outcome, record.attempt, record.queue) for record in logged] == [  # type: ignore[attr-defined]
        (logging.INFO, SUCCEED.outcome, 1, "reports"),
        (level, outcome, 1, received[1]["job"].queue),
    ]
    assert logged[0].getMessage() == (
        f"Job {received[0]['job'].pk} (tests.testapp.tasks.report) attempt 1/{max_attempts} succeeded in "
        f"{received[0]['duration']:.3f} s"
    )
    assert logged[1].getMessage() == (
        f"Job {received[1]['job'].pk} (tests.djtasks.tasks.fail) {said.format(received[1]['duration'])}: "
        "ValueError: boom"
    )
    assert (logged[1].job_id, logged[1].task) == (received[1]["job"].pk, "tests.djtasks.tasks.fail")  # type: ignore[attr-defined]


def test_the_log_numbers_an_attempt_as_the_jobs_page_does_after_an_admin_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two attempts failed, then the admin's Retry gave the job one more: its page calls
    the third "Attempt 3", and so does the worker's line, with the new count beside it."""
    earlier = [{"attempt": n, "exception_class_path": "builtins.ValueError", "message": "boom"} for n in (1, 2)]
    fail.enqueue("boom")
    Job.objects.update(max_attempts=1, errors=earlier)
    caplog.set_level(logging.INFO, "django_sqlqueue")
    outcome = execution.attempt(claim_one(), "worker-1")
    assert outcome.failure is not None
    record = outcome.failure.record
    assert record is not None
    assert record["attempt"] == 3
    assert "<strong>Attempt 3</strong>" in display.errors_html([*earlier, record])
    [logged] = [record for record in caplog.records if record.name == "django_sqlqueue.runner.execution"]
    assert logged.getMessage().startswith(
        f"Job {outcome.job.pk} (tests.djtasks.tasks.fail) attempt 3 (1/1 since its retry) failed after "
    )
    assert logged.attempt == 3  # type: ignore[attr-defined]


def test_an_attempt_whose_exception_has_no_words_is_logged_all_the_same(caplog: pytest.LogCaptureFixture) -> None:
    Job.objects.enqueue(raise_unprintable)
    caplog.set_level(logging.INFO, "django_sqlqueue")
    outcome = execution.attempt(claim_one(), "worker-1")
    assert type(outcome.error).__name__ == "Unprintable"
    (logged,) = [record for record in caplog.records if record.name == "django_sqlqueue.runner.execution"]
    assert logged.getMessage().endswith(": Unprintable: <str() of this Unprintable raised RuntimeError>")
