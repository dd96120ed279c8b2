"""Rate limits (``db/ratelimits.py``): a claim takes a token per rate-limited job from
the bucket shared by every worker, refilled by the database's clock; jobs without a
token stay ready, and do not hold back the others."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection
from django.db.models import F
from django.test import override_settings

from django_sqlqueue.models import Job, JobStatus, RateBucket
from tests.support.racing import claim_at_once
from tests.testapp.tasks import noop, paced

requires_row_locks = pytest.mark.skipif(
    connection.vendor == "sqlite", reason="SQLite claims one writer at a time: there is no lock to race for"
)
#: Three tokens at once, and hardly any more within a test.
SLOW = override_settings(SQLQUEUE_RATE_LIMITS={"test-rate": "5/h burst 3"})


def enqueue_paced(count: int, **options: object) -> list[Job]:
    return Job.objects.enqueue_many(Job.objects.build(paced, **options) for _ in range(count))  # type: ignore[arg-type]


def claimed_paced(claimed: list[Job]) -> int:
    return sum(job.task == paced.__module__ + ".paced" for job in claimed)


@SLOW
@pytest.mark.django_db
def test_a_claim_takes_no_more_jobs_than_tokens_and_the_rest_stay_ready() -> None:
    enqueue_paced(6)
    Job.objects.enqueue_many(Job.objects.build(noop) for _ in range(2))
    claimed = Job.objects.claim(worker_id="w1", limit=10)
    assert (claimed_paced(claimed), len(claimed)) == (3, 5)
    assert not Job.objects.claim(worker_id="w2", limit=10)
    assert Job.objects.filter(status=JobStatus.READY).count() == 3
    assert RateBucket.objects.get().tokens < 1


@SLOW
@pytest.mark.django_db
def test_the_bucket_refills_by_the_database_clock_up_to_the_burst() -> None:
    enqueue_paced(6)
    assert len(Job.objects.claim(worker_id="w1", limit=10)) == 3
    # Two hours ago by the database's clock: ten tokens flowed in, three fit.
    RateBucket.objects.update(updated_at=F("updated_at") - datetime.timedelta(hours=2))
    assert len(Job.objects.claim(worker_id="w1", limit=10)) == 3
    RateBucket.objects.update(updated_at=F("updated_at") - datetime.timedelta(minutes=12))  # one token
    assert len(Job.objects.claim(worker_id="w1", limit=10)) == 0  # none left to take


@SLOW
@pytest.mark.django_db
def test_jobs_of_an_empty_bucket_do_not_hold_back_the_jobs_behind_them() -> None:
    enqueue_paced(3)
    Job.objects.claim(worker_id="w1", limit=10)
    enqueue_paced(5, priority=9)
    free = Job.objects.enqueue_many([Job.objects.build(noop), Job.objects.build(noop)])
    assert [job.pk for job in Job.objects.claim(worker_id="w2", limit=2)] == [job.pk for job in free]


@pytest.mark.django_db
def test_without_rate_limits_nothing_is_read_or_written() -> None:
    with override_settings(SQLQUEUE_RATE_LIMITS={}):
        enqueue_paced(3)
        assert len(Job.objects.claim(worker_id="w1", limit=10)) == 3
    assert not RateBucket.objects.exists()


@SLOW
@pytest.mark.django_db(transaction=True)
@requires_row_locks
def test_concurrent_claimers_share_one_bucket() -> None:
    enqueue_paced(20)
    claimed = claim_at_once(6, limit=5)
    assert sum(claimed) == Job.objects.filter(status=JobStatus.RUNNING).count() == 3
