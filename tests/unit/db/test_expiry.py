"""Expiry (``db/expiry.py``, the claim's ``NOT_EXPIRED`` guard, ``enqueue(expires_at=…,
expires_in=…)``): a job not started by its deadline is never started, and ends
``CANCELLED`` with ``end_reason`` "expired"."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from django.utils import timezone

from django_sqlqueue import job
from django_sqlqueue.db import expiry, transient
from django_sqlqueue.db.clock import database_now
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.reporting.stats import recent_outcomes
from django_sqlqueue.rules.lifecycle import CLAIM, EXPIRE, OUTCOMES, Condition
from tests.testapp.tasks import expiring, record

pytestmark = pytest.mark.django_db

MINUTE = datetime.timedelta(minutes=1)


def past(job: Job) -> None:
    """Move ``job``'s deadline to a minute ago by the database's clock."""
    Job.objects.filter(pk=job.pk).update(expires_at=database_now("default") - MINUTE)


def claimed() -> list[int]:
    return [claimed.pk for claimed in Job.objects.claim(worker_id="w1")]


def test_the_state_machine_has_expire_with_its_own_outcome() -> None:
    assert Condition.NOT_EXPIRED in CLAIM.guard
    assert (EXPIRE.sources, EXPIRE.status, EXPIRE.outcome) == ((JobStatus.READY,), JobStatus.CANCELLED, "expired")
    assert "expired" in OUTCOMES  # its signal: signals.job_expired


def test_expires_in_is_counted_from_the_databases_now() -> None:
    before = database_now("default")
    made = Job.objects.enqueue(record, ["t"], expires_in=90)
    made.refresh_from_db()
    after = database_now("default")
    assert made.expires_at is not None
    assert before + datetime.timedelta(seconds=90) <= made.expires_at <= after + datetime.timedelta(seconds=90)


def test_the_task_default_and_the_enqueues_own() -> None:
    by_task = Job.objects.enqueue(expiring, ["a"])
    by_task.refresh_from_db()
    assert by_task.expires_at is not None
    assert by_task.expires_at - by_task.enqueued_at == datetime.timedelta(seconds=600)
    deadline = timezone.now() + datetime.timedelta(days=2)
    own = Job.objects.enqueue(expiring, ["b"], expires_at=deadline)
    own.refresh_from_db()
    assert own.expires_at == deadline
    assert Job.objects.enqueue(record, ["c"]).expires_at is None


def test_the_claim_never_starts_an_expired_job() -> None:
    expired, fresh, forever = (
        Job.objects.enqueue(record, ["old"], expires_in=60),
        Job.objects.enqueue(record, ["new"], expires_in=60),
        Job.objects.enqueue(record, ["any"]),
    )
    past(expired)
    assert sorted(claimed()) == sorted([fresh.pk, forever.pk])
    assert Job.objects.get(pk=expired.pk).status == JobStatus.READY


def test_the_sweep_ends_expired_ready_jobs_once() -> None:
    expired = Job.objects.enqueue(record, ["old"], expires_in=60)
    fresh = Job.objects.enqueue(record, ["new"], expires_in=60)
    running = Job.objects.enqueue(record, ["run"], expires_in=60)
    past(expired)
    assert sorted(claimed()) == sorted([fresh.pk, running.pk])
    past(running)
    waiting = Job.objects.enqueue(record, ["wait"], expires_in=60)

    assert expiry.expire(Job.objects.all()) == 1
    assert expiry.expire(Job.objects.all()) == 0

    ended = Job.objects.get(pk=expired.pk)
    assert (ended.status, ended.end_reason, ended.attempts) == (JobStatus.CANCELLED, "expired", 0)
    assert ended.finished_at is not None
    assert Job.objects.get(pk=running.pk).status == JobStatus.RUNNING
    assert Job.objects.get(pk=waiting.pk).status == JobStatus.READY


def test_a_retry_due_after_its_deadline_expires() -> None:
    """ "Not started by then" means its next attempt: a retry waiting past the deadline ends."""
    made = Job.objects.enqueue(record, ["retry"], expires_in=3600, max_attempts=3)
    (claimed_job,) = Job.objects.claim(worker_id="w1")
    Job.objects.finish(worker_id="w1", failed={claimed_job: RuntimeError("boom")})
    Job.objects.filter(pk=made.pk).update(run_at=database_now("default") + 2 * MINUTE)
    past(made)
    assert expiry.expire(Job.objects.all()) == 1
    ended = Job.objects.get(pk=made.pk)
    assert (ended.status, ended.end_reason, len(ended.errors)) == (JobStatus.CANCELLED, "expired", 1)


def test_two_sweepers_count_each_job_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made = [Job.objects.enqueue(record, [str(n)], expires_in=60) for n in range(3)]
    for each in made:
        past(each)
    real = transient.retry_transient
    other: list[int] = []

    def other_leader_first(*args: Any, **kwargs: Any) -> Any:
        # Another leader ends the same jobs between this one's read and its UPDATE.
        monkeypatch.setattr(expiry, "retry_transient", real)
        other.append(expiry.expire(Job.objects.all()))
        return real(*args, **kwargs)

    monkeypatch.setattr(expiry, "retry_transient", other_leader_first)
    assert expiry.expire(Job.objects.all()) == 0
    assert other == [3]
    assert Job.objects.filter(status=JobStatus.CANCELLED, end_reason="expired").count() == 3


def test_the_sweep_goes_in_chunks() -> None:
    made = Job.objects.enqueue_many(Job.objects.build(record, [str(n)], expires_in=60) for n in range(5))
    Job.objects.filter(pk__in=[each.pk for each in made]).update(expires_at=database_now("default") - MINUTE)
    assert expiry.expire(Job.objects.all(), batch_size=2, max_chunks=1) == 2
    assert expiry.expire(Job.objects.all(), batch_size=2) == 3


def test_enqueue_rows_takes_an_expiry() -> None:
    assert Job.objects.enqueue_rows([(record, ["a"], None), (record, ["b"], None)], expires_in=120) == 2
    assert Job.objects.filter(expires_at__isnull=True).count() == 0
    for made in Job.objects.all():
        assert made.expires_at is not None
        # PostgreSQL's COPY reads the database's now once, just before its rows.
        assert abs(made.expires_at - made.enqueued_at - datetime.timedelta(seconds=120)) < datetime.timedelta(seconds=1)


def test_stats_count_the_expired() -> None:
    made = Job.objects.enqueue(record, ["old"], expires_in=60)
    Job.objects.cancel([Job.objects.enqueue(record, ["cancelled"]).pk])
    past(made)
    expiry.expire(Job.objects.all())
    recent = recent_outcomes(Job.objects.get_queryset())["default"]
    assert (recent.finished_last_hour, recent.expired_last_hour) == (2, 1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"expires_in": -5}, "expires_in must be a timedelta or a number of seconds more than 0"),
        ({"expires_in": 0}, "expires_in must be a timedelta or a number of seconds more than 0"),
        ({"expires_in": "soon"}, "expires_in must be a timedelta"),
        ({"expires_in": 5, "expires_at": "x"}, "pass expires_at or expires_in, not both"),
        ({"expires_at": datetime.datetime(2030, 1, 1)}, "expires_at 2030-01-01T00:00:00 is naive but USE_TZ is on"),
        (
            {
                "run_at": datetime.datetime(2030, 1, 2, tzinfo=datetime.timezone.utc),
                "expires_at": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc),
            },
            "the job would expire (2030-01-01T00:00:00+00:00) before it may first run (2030-01-02T00:00:00+00:00)",
        ),
        ({"delay": 60, "expires_in": 60}, "the job would expire"),
    ],
    ids=["negative", "zero", "text", "both", "naive", "before-run_at", "before-delay"],
)
def test_bad_expiry_is_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue(record, ["x"], **options)
    assert message in str(excinfo.value)
    with pytest.raises(InvalidJobError):
        Job.objects.build(record, ["x"], **options)
    assert not Job.objects.exists()


@override_settings(USE_TZ=False)
def test_an_aware_expiry_without_use_tz_is_refused() -> None:
    with pytest.raises(InvalidJobError, match=r"expires_at .* has a time zone but USE_TZ is off"):
        Job.objects.enqueue(record, ["x"], expires_at=datetime.datetime.now(datetime.timezone.utc))


def test_enqueue_many_checks_an_expiry_changed_after_build() -> None:
    built = Job.objects.build(record, ["x"])
    built.expires_at = datetime.datetime(2030, 1, 1)  # naive, under USE_TZ
    with pytest.raises(InvalidJobError, match="expires_at 2030-01-01T00:00:00 is naive"):
        Job.objects.enqueue_many([built])
    assert not Job.objects.exists()


def test_a_bad_task_expiry_is_refused_at_registration() -> None:
    with pytest.raises(ImproperlyConfigured, match="expires_in must be"):

        @job(name="tests.expires_badly", expires_in=-1)
        def expires_badly() -> None: ...


@pytest.mark.django_db(transaction=True)
def test_each_expired_job_sends_its_signal_once() -> None:
    from django_sqlqueue import signals

    made = [Job.objects.enqueue(record, [str(n)], expires_in=60) for n in range(3)]
    for each in made:
        past(each)
    heard: list[tuple[int, str, str]] = []

    def receiver(sender: type[Job], *, job: Job, transition: Any, **kwargs: Any) -> None:
        heard.append((job.pk, job.status, job.end_reason))

    signals.job_expired.connect(receiver)
    try:
        assert Job.objects.expire() == 3
        assert Job.objects.expire() == 0
    finally:
        signals.job_expired.disconnect(receiver)
    assert sorted(heard) == sorted((each.pk, JobStatus.CANCELLED, "expired") for each in made)


def test_run_jobs_ends_expired_jobs_and_runs_the_others() -> None:
    from django_sqlqueue.testing import run_jobs

    expired = Job.objects.enqueue(record, ["old"], expires_in=60)
    past(expired)
    Job.objects.enqueue(record, ["new"], expires_in=60)
    ran = run_jobs()
    assert (ran.succeeded, ran.expired) == (1, 1)
    assert Job.objects.get(pk=expired.pk).end_reason == "expired"
