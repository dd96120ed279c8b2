"""What a failed attempt becomes (``rules/failures.py``): the backoff before a retry,
what is kept of its exception (the error record: its class, message and traceback),
and what a snooze with a delay out of range becomes. The records are read back as the
finish (``db/finishing.py``) stored them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.test import override_settings

from django_sqlqueue.exceptions import Snooze
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules import failures, lifecycle
from django_sqlqueue.rules.failures import MESSAGE_LIMIT, TRACEBACK_LIMIT, retry_delay
from tests.support.attempts import claim, db_now, raised
from tests.testapp.tasks import noop

# The database's clock may keep only milliseconds (SQLite) while a delay has microseconds.
SLACK = datetime.timedelta(milliseconds=2)


def test_retry_delay_doubles_within_its_jitter_window() -> None:
    # Defaults: 10 s, doubling, at most an hour.
    for attempt, ceiling in [(1, 10), (2, 20), (3, 40), (4, 80), (8, 1280), (9, 2560), (10, 3600), (30, 3600)]:
        delays = [retry_delay(attempt).total_seconds() for _ in range(300)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays), (attempt, min(delays), max(delays))
        # Spread over the whole upper half, so jobs that failed together do not retry together.
        assert min(delays) < ceiling * 0.6
        assert max(delays) > ceiling * 0.9
        assert len(set(delays)) > 250


@override_settings(SQLQUEUE_RETRY_BACKOFF=0.5, SQLQUEUE_RETRY_BACKOFF_MAX=3)
def test_retry_delay_follows_the_settings() -> None:
    for attempt, ceiling in [(1, 0.5), (2, 1), (3, 2), (4, 3), (5, 3)]:
        delays = [retry_delay(attempt).total_seconds() for _ in range(100)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)


@override_settings(SQLQUEUE_RETRY_BACKOFF=5, SQLQUEUE_RETRY_BACKOFF_MAX=5)
def test_retry_delay_with_backoff_equal_to_its_max() -> None:
    assert all(2.5 <= retry_delay(attempt).total_seconds() <= 5 for attempt in (1, 2, 10))


@pytest.mark.parametrize("attempt", [1030, 5000])
def test_retry_delay_of_a_job_retried_for_ever_stays_capped(attempt: int) -> None:
    # max_attempts has no upper bound, so attempt counts past 1024 (2**1024 overflows a float) happen.
    assert 1800 <= retry_delay(attempt).total_seconds() <= 3600


# The backoff, as a failed attempt is written


@pytest.mark.django_db
@override_settings(SQLQUEUE_RETRY_BACKOFF=100, SQLQUEUE_RETRY_BACKOFF_MAX=1000)
@pytest.mark.parametrize(
    ("attempts_before", "low", "high"), [(0, 50, 100), (1, 100, 200), (3, 400, 800), (9, 500, 1000)]
)
def test_failure_with_attempts_left_is_retried_later(attempts_before: int, low: float, high: float) -> None:
    Job.objects.enqueue(noop, max_attempts=20)
    Job.objects.update(attempts=attempts_before)
    (job,) = Job.objects.claim(worker_id="w")
    before = db_now()
    assert Job.objects.finish(worker_id="w", failed={job: raised("again")}) == 1
    after = db_now()

    job.refresh_from_db()
    assert (job.status, job.attempts, job.finished_at) == (JobStatus.READY, attempts_before + 1, None)
    assert before + datetime.timedelta(seconds=low) - SLACK <= job.run_at <= after + datetime.timedelta(seconds=high)
    assert Job.objects.claim(worker_id="w") == []


@pytest.mark.django_db
def test_jobs_failing_together_retry_at_different_times() -> None:
    jobs = claim(20)
    Job.objects.finish(worker_id="w", failed={job: raised("same") for job in jobs})
    assert len(set(Job.objects.values_list("run_at", flat=True))) > 15


# The error record: what is kept of the exception


@pytest.mark.django_db
def test_failure_keeps_the_exception_and_its_traceback() -> None:
    (job,) = claim()
    error = raised("it broke: ünïcode")
    assert Job.objects.finish(worker_id="host:7:w", failed={job: error}) == 0  # not this worker's job
    assert Job.objects.finish(worker_id="w", failed={job: error}) == 1
    job.refresh_from_db()
    (record,) = job.errors
    assert set(record) == {"attempt", "worker", "started_at", "exception_class_path", "message", "traceback"}
    assert record["attempt"] == 1
    assert record["worker"] == "w"
    assert job.started_at is not None
    assert record["started_at"] == job.started_at.isoformat()
    assert record["exception_class_path"] == "builtins.ValueError"
    assert record["message"] == "it broke: ünïcode"
    assert record["traceback"].startswith("Traceback (most recent call last):\n")
    assert "in failing_task_body\n" in record["traceback"]
    assert "raise ValueError(message)" in record["traceback"]
    assert record["traceback"].endswith("ValueError: it broke: ünïcode\n")


@pytest.mark.django_db
def test_exception_class_path_of_a_nested_class() -> None:
    class Boom(Exception):
        pass

    (job,) = claim()
    Job.objects.finish(worker_id="w", failed={job: Boom()})
    job.refresh_from_db()
    assert job.errors[0]["exception_class_path"] == (
        "tests.unit.rules.test_failures.test_exception_class_path_of_a_nested_class.<locals>.Boom"
    )
    assert job.errors[0]["message"] == ""


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no words for it")


@pytest.mark.django_db
def test_an_exception_whose_str_raises_is_recorded_with_a_placeholder() -> None:
    (job,) = claim()
    assert Job.objects.finish(worker_id="w", failed={job: Unprintable()}) == 1
    job.refresh_from_db()
    (record,) = job.errors
    assert record["exception_class_path"] == f"{__name__}.Unprintable"
    assert record["message"] == "<str() of this Unprintable raised RuntimeError>"
    assert record["traceback"].endswith("Unprintable: <exception str() failed>\n")


@pytest.mark.django_db
def test_nul_and_lone_surrogates_in_an_error_are_stored_as_escapes() -> None:
    (job,) = claim()
    Job.objects.finish(worker_id="w", failed={job: raised("a NUL \x00 and a lone \ud800 surrogate")})
    job.refresh_from_db()
    (record,) = job.errors
    assert record["message"] == "a NUL \\x00 and a lone \\ud800 surrogate"
    assert record["traceback"].endswith("ValueError: a NUL \\x00 and a lone \\ud800 surrogate\n")


@pytest.mark.django_db
def test_a_long_message_and_traceback_are_cut_in_the_middle_saying_so() -> None:
    (job,) = claim()
    message = "head " + "m" * (2 * TRACEBACK_LIMIT) + " tail"
    Job.objects.finish(worker_id="w", failed={job: raised(message)})
    job.refresh_from_db()
    (record,) = job.errors
    cut = f"\n[... {len(message) - MESSAGE_LIMIT} characters cut ...]\n"
    assert record["message"] == message[: MESSAGE_LIMIT // 2] + cut + message[-MESSAGE_LIMIT // 2 :]
    assert len(record["traceback"]) < TRACEBACK_LIMIT + 100
    assert record["traceback"].startswith("Traceback (most recent call last):\n")
    assert "characters cut ...]" in record["traceback"]
    assert record["traceback"].endswith("m tail\n")


# Snoozes


@pytest.mark.django_db
@pytest.mark.parametrize("delay", [-1, float("nan"), "soon", datetime.timedelta(days=-1)])
def test_a_snooze_with_a_bad_delay_fails_the_attempt_saying_why(delay: Any) -> None:
    Job.objects.enqueue(noop)
    (job,) = Job.objects.claim(worker_id="w")
    failure = failures.decide(job, Snooze(delay), "w")
    assert failure.transition is lifecycle.RETRY
    assert failure.record is not None
    assert failure.record["exception_class_path"] == "django_sqlqueue.exceptions.InvalidJobError"
    assert failure.record["message"].startswith("tests.testapp.tasks.noop raised Snooze, but its delay must be")
