"""A task's own backoff (``rules/backoff.py``), in the shape of Django's retry proposal:
checked at registration, and asked by a failed attempt with attempts left for its delay,
or for no more retries; a backoff that raises or returns no delay fails the job with an
error that says so. Read back as the finish (``db/finishing.py``) writes them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_sqlqueue.exceptions import WorkerLost
from django_sqlqueue.maintenance.rescue import rescue_worker
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.registry import job
from tests.support.attempts import db_now, raised

SLACK = datetime.timedelta(milliseconds=2)
seen: list[tuple[BaseException, Any]] = []


def ninety_seconds(exception: BaseException, failed: Any) -> float | None:
    seen.append((exception, failed))
    return None if "final" in str(exception) else 90


def broken(exception: BaseException, failed: Any) -> float | None:
    raise ZeroDivisionError("policy divided by zero")


def wrong(exception: BaseException, failed: Any) -> Any:
    return "soon"


@job(max_attempts=5, backoff=ninety_seconds)
def paced(n: int) -> None:
    """Retried 90 s after each failure, as its backoff says."""


@job(max_attempts=5, backoff=broken)
def badly_paced(n: int) -> None:
    """Its backoff raises."""


@job(max_attempts=5, backoff=wrong)
def wrongly_paced(n: int) -> None:
    """Its backoff returns no delay."""


def failed_once(task: Any, message: str) -> Job:
    Job.objects.enqueue(task, (1,))
    (claimed,) = Job.objects.claim(worker_id="w")
    assert Job.objects.finish(worker_id="w", failed={claimed: raised(message)}) == 1
    claimed.refresh_from_db()
    return claimed


@pytest.mark.django_db
def test_the_backoff_decides_the_delay_and_sees_the_failed_attempt() -> None:
    seen.clear()
    failed = failed_once(paced, "again")
    assert (failed.status, failed.attempts) == (JobStatus.READY, 1)
    (exception, attempt), *_ = seen
    assert str(exception) == "again"
    assert (attempt.pk, attempt.status, attempt.errors[-1]["message"]) == (failed.pk, JobStatus.FAILED, "again")
    now = db_now()
    assert now + datetime.timedelta(seconds=85) <= failed.run_at <= now + datetime.timedelta(seconds=90) + SLACK


@pytest.mark.django_db
def test_a_backoff_returning_none_fails_the_job_with_attempts_left() -> None:
    failed = failed_once(paced, "final")
    assert (failed.status, failed.attempts, failed.max_attempts) == (JobStatus.FAILED, 1, 5)
    assert failed.errors[-1]["message"] == "final"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("task", "message", "cause"),
    [
        (
            badly_paced,
            "its backoff raised ZeroDivisionError deciding the retry after ValueError; no retry",
            "policy divided by zero",
        ),
        (
            wrongly_paced,
            "its backoff returned no delay (delay must be a timedelta or a number of seconds from 0 to 365000 days, "
            "not 'soon', or None); no retry",
            "again",
        ),
    ],
)
def test_a_backoff_that_raises_or_returns_no_delay_fails_the_job_saying_so(task: Any, message: str, cause: str) -> None:
    failed = failed_once(task, "again")
    assert failed.status == JobStatus.FAILED
    (record,) = failed.errors
    assert record["exception_class_path"] == "django_sqlqueue.exceptions.InvalidJobError"
    assert record["message"] == f"{task.__module__}.{task.__qualname__}: {message}"
    # The task's own error and the backoff's are in the traceback.
    assert "ValueError: again" in record["traceback"]
    assert cause in record["traceback"]


def two_arguments(exception: BaseException, task_result: Any, *, extra: int = 0) -> float:
    return 1


def one_argument(exception: BaseException) -> float:
    return 1


def never_run() -> None:
    """Registered by the tests of bad backoffs, which refuse it."""


@pytest.mark.parametrize(
    ("backoff", "message"),
    [
        (30, "backoff must be a callable taking (exception, task_result), not int"),
        (
            one_argument,
            "backoff 'one_argument' cannot take (exception, task_result): too many positional arguments",
        ),
    ],
)
def test_a_bad_backoff_is_refused_at_registration(backoff: Any, message: str) -> None:
    with pytest.raises(ImproperlyConfigured) as excinfo:
        job(backoff=backoff)(never_run)
    assert str(excinfo.value) == f"@job on 'tests.unit.rules.test_backoff.never_run': {message}."


def test_a_backoff_with_optional_arguments_is_accepted() -> None:
    assert job(backoff=two_arguments, name="tests.backoff.two")(never_run) is never_run


@pytest.mark.django_db
def test_a_dead_workers_job_is_retried_as_its_backoff_says() -> None:
    Job.objects.enqueue(paced, (1,))
    (held,) = Job.objects.claim(worker_id="crashed")
    rescue_worker("crashed", WorkerLost("gone"), started={held.pk})
    held.refresh_from_db()
    assert (held.status, held.errors[-1]["message"]) == (JobStatus.READY, "gone")
    now = db_now()
    assert now + datetime.timedelta(seconds=85) <= held.run_at <= now + datetime.timedelta(seconds=90) + SLACK
