"""Retries of Django tasks in the shape of Django's retry proposal
(``backends/retries.py``): ``max_attempts`` and ``backoff(exception, task_result)`` on the
task, ``MAX_ATTEMPTS`` and ``BACKOFF`` (a callable or its dotted path) in the backend's
``OPTIONS`` or beside them; checked when the backend or the task is made."""

from __future__ import annotations

import datetime
from typing import Any, cast

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_sqlqueue.backends import SQLQueueTask
from django_sqlqueue.backends.compat import InvalidTask, TaskResult, TaskResultStatus, task_backends
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.testing import run_jobs
from tests.djtasks.tasks import add, retried_raising_backoff, retried_retried_backoff
from tests.support.attempts import db_now

pytestmark = pytest.mark.django_db

BACKEND = "django_sqlqueue.backends.SQLQueueBackend"
seen: list[tuple[BaseException, TaskResult[..., Any]]] = []


def tasks_setting(**params: Any) -> dict[str, Any]:
    return {"default": {"BACKEND": BACKEND, "QUEUES": ["default", "reports"], **params}}


def two_minutes(exception: BaseException, task_result: TaskResult[..., Any]) -> float | None:
    seen.append((exception, task_result))
    return 120


def one_argument(exception: BaseException) -> float:
    return 1


def adds(a: int, b: int) -> int:
    return a + b


def fail_once(claimed: Job) -> Job:
    assert Job.objects.finish(worker_id="w", failed={claimed: ValueError("nope")}) == 1
    claimed.refresh_from_db()
    return claimed


@pytest.mark.parametrize(
    "params",
    [
        {"OPTIONS": {"MAX_ATTEMPTS": 4, "BACKOFF": "tests.unit.test_backend_retries.two_minutes"}},
        {"MAX_ATTEMPTS": 4, "BACKOFF": two_minutes},
    ],
    ids=["in OPTIONS, a dotted path", "beside OPTIONS, as the proposal has them"],
)
def test_the_backends_max_attempts_and_backoff_apply_to_every_task(params: dict[str, Any]) -> None:
    seen.clear()
    with override_settings(TASKS=tasks_setting(**params)):
        result = add.enqueue(1, 2)
        (claimed,) = Job.objects.claim(worker_id="w")
        failed = fail_once(claimed)
    assert (failed.status, failed.max_attempts) == (JobStatus.READY, 4)
    now = db_now()
    assert now + datetime.timedelta(seconds=115) <= failed.run_at <= now + datetime.timedelta(seconds=121)
    ((exception, task_result),) = seen
    assert str(exception) == "nope"
    # The result as the failed attempt left it.
    assert (task_result.id, task_result.status, task_result.attempts) == (result.id, TaskResultStatus.FAILED, 1)
    assert task_result.errors[-1].exception_class is ValueError
    assert task_result.task.func is add.func


def test_without_a_backoff_retries_double_from_the_setting() -> None:
    with override_settings(SQLQUEUE_RETRY_BACKOFF=100, SQLQUEUE_RETRY_BACKOFF_MAX=1000):
        add.enqueue(1, 2)
        failed = fail_once(Job.objects.claim(worker_id="w")[0])
    now = db_now()
    assert now + datetime.timedelta(seconds=45) <= failed.run_at <= now + datetime.timedelta(seconds=101)


def test_a_tasks_own_backoff_and_max_attempts() -> None:
    own = SQLQueueTask(
        func=adds,
        backend="default",
        queue_name="default",
        priority=0,
        run_after=None,
        max_attempts=2,
        backoff=two_minutes,
    )
    assert cast(SQLQueueTask, own.using(priority=3)).backoff is two_minutes
    own.enqueue(1, 2)
    assert Job.objects.get().max_attempts == 2


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"OPTIONS": {"BACKOFF": "tests.unit.test_backend_retries.nowhere"}},
            "TASKS['default']: BACKOFF 'tests.unit.test_backend_retries.nowhere' cannot be imported: Module "
            '"tests.unit.test_backend_retries" does not define a "nowhere" attribute/class',
        ),
        (
            {"OPTIONS": {"BACKOFF": 30}},
            "TASKS['default']: BACKOFF: backoff must be a callable taking (exception, task_result), not int.",
        ),
        (
            {"BACKOFF": one_argument},
            "TASKS['default']: BACKOFF: backoff 'one_argument' cannot take (exception, task_result): "
            "too many positional arguments.",
        ),
        (
            {"MAX_ATTEMPTS": -1},
            "TASKS['default']['OPTIONS']: max_attempts must be an integer from 1 to 2147483647, not -1.",
        ),
        (
            {"MAX_ATTEMPTS": 3, "OPTIONS": {"max_attempts": 3}},
            "TASKS['default']: set MAX_ATTEMPTS or OPTIONS['max_attempts'], not both.",
        ),
        (
            {"BACKOFF": two_minutes, "OPTIONS": {"BACKOFF": two_minutes}},
            "TASKS['default']: set BACKOFF in OPTIONS or beside it, not both.",
        ),
    ],
)
def test_bad_retry_settings_are_refused(params: dict[str, Any], message: str) -> None:
    with override_settings(TASKS=tasks_setting(**params)), pytest.raises(ImproperlyConfigured) as excinfo:
        task_backends["default"]
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"backoff": "soon"}, "backoff must be a callable taking (exception, task_result), not str"),
        (
            {"backoff": one_argument},
            "backoff 'one_argument' cannot take (exception, task_result): too many positional arguments",
        ),
        ({"max_attempts": -2}, "max_attempts must be an integer from 1 to 2147483647, not -2"),
    ],
)
def test_a_bad_backoff_or_max_attempts_is_refused_when_the_task_is_made(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidTask) as excinfo:
        SQLQueueTask(func=adds, backend="default", queue_name="default", priority=0, run_after=None, **options)
    assert str(excinfo.value) == f"tests.unit.test_backend_retries.adds: {message}."


def test_a_backoff_may_decline_a_retry_and_a_raising_one_fails_the_job_saying_so() -> None:
    declined = retried_retried_backoff.enqueue(3, "PermissionError")
    broken = retried_raising_backoff.enqueue(3)
    recovered = retried_retried_backoff.enqueue(3)
    run_jobs(scheduled=True)
    for result in (declined, broken, recovered):
        result.refresh()
    assert [(result.status, result.attempts) for result in (declined, broken, recovered)] == [
        (TaskResultStatus.FAILED, 1),
        (TaskResultStatus.FAILED, 1),
        (TaskResultStatus.SUCCESSFUL, 3),
    ]
    assert recovered.return_value == 3
    assert declined.errors[0].exception_class is PermissionError
    (error,) = broken.errors
    assert error.exception_class_path == "django_sqlqueue.exceptions.InvalidJobError"
    assert error.traceback.endswith(
        "InvalidJobError: tests.djtasks.tasks.retried_raising_backoff: its backoff raised KeyError deciding the "
        "retry after ValueError; no retry\n"
    )
    assert "KeyError: 'no such policy'" in error.traceback
