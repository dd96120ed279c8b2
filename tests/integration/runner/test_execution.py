"""The real ``runworkers`` runs Django tasks: results, context, coroutines, failures
with their tracebacks in Django's task log, and rows naming no registered task; and
``@job`` coroutines, and tasks that leave autocommit off; and it logs failed attempts
where its default verbosity shows them."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from typing import Any

from django_sqlqueue.backends.compat import TaskResultStatus
from django_sqlqueue.exceptions import UnknownTaskError
from django_sqlqueue.models import Job, JobStatus
from tests.djtasks.tasks import add, async_double, fail, retried_raising_backoff, retried_retried_backoff, whoami
from tests.support.workers import FAST_CLOCKS, KEEP_FINISHED, ROOT, Workers
from tests.testapp import tasks
from tests.testapp.models import Receipt
from tests.testapp.tasks import async_receipt, autocommit_left_off


def test_runworkers_runs_django_tasks(start_workers: Callable[..., Workers]) -> None:
    summed, doubled, greeted, failed = (
        add.enqueue(2, 3),
        async_double.enqueue(4),
        whoami.enqueue("hi"),
        fail.enqueue("boom"),
    )
    Job.objects.filter(pk=failed.id).update(max_attempts=1)
    unknown = Job.objects.create(task="tests.support.poison.run", max_attempts=1, queue="default")

    workers = start_workers("--burst", "--processes", "1")
    assert workers.wait(120) == 0, workers.text()

    for result in (summed, doubled, greeted, failed):
        result.refresh()
    worker = Job.objects.get(pk=summed.id).worker
    assert [(result.status, result.worker_ids) for result in (summed, doubled, greeted, failed)] == [
        (TaskResultStatus.SUCCESSFUL, [worker]),
        (TaskResultStatus.SUCCESSFUL, [worker]),
        (TaskResultStatus.SUCCESSFUL, [worker]),
        (TaskResultStatus.FAILED, [worker]),
    ]
    values: list[Any] = [summed.return_value, doubled.return_value, greeted.return_value]
    assert values == [
        5,
        [4, 8],
        {"label": "hi", "attempt": 1, "status": "RUNNING"},
    ]
    (error,) = failed.errors
    assert error.exception_class is ValueError
    assert error.traceback.endswith("raise ValueError(message)\nValueError: boom\n")
    # Django's task log reports the failure with its traceback, from the worker.
    assert f"Task id={failed.id} path=tests.djtasks.tasks.fail state=FAILED\nTraceback" in workers.text()

    unknown.refresh_from_db()
    assert unknown.status == JobStatus.FAILED
    assert [(error["exception_class_path"], error["message"]) for error in unknown.errors] == [
        (
            f"{UnknownTaskError.__module__}.UnknownTaskError",
            "No task is registered as 'tests.support.poison.run'. Tasks are registered by @django_sqlqueue.job, "
            "or by Django's @task with the SQLQueueBackend, in a module that is imported: "
            "an installed app's tasks.py is imported for you.",
        )
    ]


def test_runworkers_retries_django_tasks_as_their_backoff_says(start_workers: Callable[..., Workers]) -> None:
    """A backoff that asks for a retry, one that declines, and one that raises: the worker
    records each outcome and runs on."""
    recovered = retried_retried_backoff.enqueue(3)
    declined = retried_retried_backoff.enqueue(3, "PermissionError")
    broken = retried_raising_backoff.enqueue(3)
    after = add.enqueue(1, 1)

    workers = start_workers("--burst", "--processes", "1")
    assert workers.wait(120) == 0, workers.text()

    for result in (recovered, declined, broken, after):
        result.refresh()
    assert [(result.status, result.attempts) for result in (recovered, declined, broken, after)] == [
        (TaskResultStatus.SUCCESSFUL, 3),
        (TaskResultStatus.FAILED, 1),
        (TaskResultStatus.FAILED, 1),
        (TaskResultStatus.SUCCESSFUL, 1),
    ]
    assert [error.exception_class for error in recovered.errors] == [ValueError, ValueError]
    assert declined.errors[0].exception_class is PermissionError
    assert broken.errors[0].traceback.endswith(
        "tests.djtasks.tasks.retried_raising_backoff: its backoff raised KeyError deciding the retry after "
        "ValueError; no retry\n"
    )
    assert Job.objects.filter(pk=declined.id).values_list("attempts", "max_attempts").get() == (1, 5)


def test_runworkers_runs_async_jobs_and_fails_tasks_that_leave_autocommit_off(
    start_workers: Callable[..., Workers],
) -> None:
    done = Job.objects.enqueue(async_receipt, ["async"])
    left = Job.objects.enqueue(autocommit_left_off, ["left"], max_attempts=1)

    workers = start_workers("--burst", "--processes", "1")
    assert workers.wait(120) == 0, workers.text()

    done.refresh_from_db()
    left.refresh_from_db()
    assert (done.status, done.result) == (JobStatus.SUCCESSFUL, {"attempt": 1, "receipts": 1})
    assert (left.status, left.last_error_class) == (JobStatus.FAILED, "django_sqlqueue.exceptions.TransactionLeftOpen")
    assert list(Receipt.objects.values_list("token", flat=True)) == ["async"]


def test_failed_attempts_show_on_stderr_at_the_default_verbosity(child_env: dict[str, str], python: str) -> None:
    """At ``-v 1`` (WARNING) a failed attempt with attempts left is one line, the last
    failed attempt another; a success (INFO) is not shown."""
    retried = Job.objects.enqueue(tasks.fail, ("boom",), max_attempts=2)
    failed = Job.objects.enqueue(tasks.fail, ("bang",), max_attempts=1)
    done = Job.objects.enqueue(tasks.add, (1, 2))
    run = subprocess.run(
        [python, "manage.py", "runworkers", "--burst", "--processes", "1"],
        cwd=ROOT,
        # The retry an hour away: the burst ends before it.
        env={
            **child_env,
            **FAST_CLOCKS,
            **KEEP_FINISHED,
            "SQLQUEUE_RETRY_BACKOFF": "3600",
            "SQLQUEUE_RETRY_BACKOFF_MAX": "3600",
        },
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    seconds = r"[0-9]+\.[0-9]{3} s"
    assert re.search(
        rf"^Job {retried.pk} \(testapp\.fail\) attempt 1/2 failed after {seconds} and will be retried: "
        r"RuntimeError: boom$",
        run.stderr,
        re.MULTILINE,
    ), run.stderr
    assert re.search(
        rf"^Job {failed.pk} \(testapp\.fail\) attempt 1/1 failed after {seconds}, its last attempt; "
        r"the job is FAILED: RuntimeError: bang$",
        run.stderr,
        re.MULTILINE,
    ), run.stderr
    assert f"Job {done.pk} " not in run.stderr
    assert [Job.objects.get(pk=job.pk).status for job in (retried, failed, done)] == [
        JobStatus.READY,
        JobStatus.FAILED,
        JobStatus.SUCCESSFUL,
    ]
