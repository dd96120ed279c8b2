"""``SQLQUEUE_MIDDLEWARE`` (``runner/middleware.py``): the chain is built once, wraps
every attempt in order, in the job's thread, and what it raises fails the attempt."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.test import override_settings

from django_sqlqueue import checks
from django_sqlqueue.backends.compat import TaskResult, task_finished
from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import FAIL, RETRY
from django_sqlqueue.runner import middleware
from django_sqlqueue.runner.execution import attempt
from tests.djtasks.tasks import fail
from tests.support import middleware as test_middleware
from tests.testapp.tasks import add, noop

pytestmark = pytest.mark.django_db

OUTER, RECORDING = "tests.support.middleware.outer", "tests.support.middleware.recording"


@pytest.fixture(autouse=True)
def noted() -> Iterator[list[str]]:
    test_middleware.NOTED.clear()
    yield test_middleware.NOTED
    test_middleware.NOTED.clear()


def claim(count: int = 1) -> list[Job]:
    return list(Job.objects.claim(worker_id="worker-1", limit=count))


def test_no_middleware_no_chain() -> None:
    assert middleware.chain("worker-1") is None


@override_settings(SQLQUEUE_MIDDLEWARE=[OUTER, RECORDING])
def test_the_chain_is_built_once_and_wraps_every_attempt_outermost_first(noted: list[str]) -> None:
    first, second = Job.objects.enqueue(add, [1, 2]), Job.objects.enqueue(add, [3, 4])
    through = middleware.chain("worker-1")
    assert noted == ["recording built", "outer built"]  # innermost first, as Django builds its own
    outcomes = [attempt(job, "worker-1", through) for job in claim(2)]

    assert [outcome.result for outcome in outcomes] == [3, 7]
    # In the job's own thread (here the test's), with current_job() set.
    assert noted[2:] == [
        f"outer before {first.pk}",
        f"recording before {first.pk} attempt 1 current {first.pk} thread main",
        f"recording after {first.pk} 3",
        f"outer after {first.pk}",
        f"outer before {second.pk}",
        f"recording before {second.pk} attempt 1 current {second.pk} thread main",
        f"recording after {second.pk} 7",
        f"outer after {second.pk}",
    ]


@override_settings(SQLQUEUE_MIDDLEWARE=[RECORDING])
@pytest.mark.parametrize(("max_attempts", "transition"), [(2, RETRY), (1, FAIL)])
def test_a_middleware_that_raises_fails_the_attempt_as_the_task_would(max_attempts: int, transition: object) -> None:
    Job.objects.enqueue(noop, kwargs={"refuse": True}, max_attempts=max_attempts)
    (job,) = claim()
    outcome = attempt(job, "worker-1", middleware.chain("worker-1"))

    assert isinstance(outcome.error, test_middleware.Refused)
    assert outcome.failure is not None
    assert (outcome.failure.transition, outcome.failure.error) == (transition, outcome.error)
    Job.objects.finish_as_decided(worker_id="worker-1", succeeded={}, failed={job: outcome.failure})
    job.refresh_from_db()
    assert (job.status, job.last_error_class) == (transition.target, "tests.support.middleware.Refused")  # type: ignore[attr-defined]


@override_settings(SQLQUEUE_MIDDLEWARE=[RECORDING])
def test_a_django_task_that_fails_through_middleware_is_decided_once(noted: list[str]) -> None:
    """The failure Django's ``task_finished`` was told of is the one the finisher writes."""
    told: list[TaskResult] = []  # type: ignore[type-arg]

    def finished(task_result: TaskResult, **kwargs: object) -> None:  # type: ignore[type-arg]
        told.append(task_result)

    fail.enqueue("boom")
    (job,) = claim()
    task_finished.connect(finished)
    try:
        outcome = attempt(job, "worker-1", middleware.chain("worker-1"))
    finally:
        task_finished.disconnect(finished)
    assert outcome.failure is not None
    (result,) = told
    assert result.status == "READY"
    assert outcome.failure.transition is RETRY
    assert noted[-1] == f"recording raised {job.pk} ValueError"
    assert outcome.failure.record is not None
    assert outcome.failure.record["message"] == "boom"


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        ("tests.support.middleware.outer", "SQLQUEUE_MIDDLEWARE must be a list of dotted paths, not "),
        ([42], "SQLQUEUE_MIDDLEWARE must hold dotted paths (strings), not 42."),
        (["tests.support.nowhere.outer"], "SQLQUEUE_MIDDLEWARE: cannot import 'tests.support.nowhere.outer': "),
        (["tests.support.middleware.absent"], "SQLQUEUE_MIDDLEWARE: cannot import 'tests.support.middleware.absent'"),
        (["tests.support.middleware.NOT_CALLABLE"], "SQLQUEUE_MIDDLEWARE: 'tests.support.middleware.NOT_CALLABLE' "),
    ],
)
def test_a_bad_setting_is_a_system_check_error_and_stops_runworkers(paths: object, message: str) -> None:
    with override_settings(SQLQUEUE_MIDDLEWARE=paths):
        with pytest.raises(ImproperlyConfigured) as excinfo:
            middleware.chain("worker-1")
        assert str(excinfo.value).startswith(message)
        (error,) = [error for error in checks.check_settings() if error.id == "sqlqueue.E039"]
        assert error.msg == str(excinfo.value)
        with pytest.raises(CommandError, match=r"No worker could start: fix it, then start runworkers again\.$"):
            call_command("runworkers", "--burst", "--processes", "1", stdout=StringIO(), stderr=StringIO())


@override_settings(SQLQUEUE_MIDDLEWARE=["tests.support.middleware.not_a_factory"])
def test_a_factory_that_returns_no_handler_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="returned None, not a handler that takes a job"):
        middleware.chain("worker-1")
