"""Expiry with real ``runworkers`` processes: their claims never start a job past its
``expires_at``, and the supervisor holding the maintenance lease ends those jobs
``CANCELLED`` with ``end_reason`` "expired" while its workers run the others."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest

from django_sqlqueue.db.clock import database_now
from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import Workers, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import expiring, record

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

StartWorkers = Callable[..., Workers]


def test_workers_never_start_an_expired_job_and_the_leader_ends_it(start_workers: StartWorkers) -> None:
    expired = Job.objects.enqueue_many(Job.objects.build(expiring, [f"old-{n}"]) for n in range(50))
    Job.objects.filter(pk__in=[job.pk for job in expired]).update(
        expires_at=database_now("default") - datetime.timedelta(seconds=1)
    )
    Job.objects.enqueue_many(Job.objects.build(expiring, [f"new-{n}"]) for n in range(50))
    Job.objects.enqueue_many(Job.objects.build(record, [f"any-{n}"]) for n in range(20))
    workers = start_workers("--processes", "2", "--threads", "2")

    wait_until(
        lambda: (
            Receipt.objects.count() == 70
            and Job.objects.filter(status=JobStatus.CANCELLED, end_reason="expired").count() == 50
        ),
        timeout=90,
        why=workers.text,
    )
    assert workers.stop() == 0, workers.text()
    assert not Receipt.objects.filter(token__startswith="old-").exists()
    assert set(Job.objects.filter(end_reason="expired").values_list("attempts", flat=True)) == {0}
    assert Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == 70


def test_a_burst_drains_the_live_jobs_and_starts_no_expired_one(start_workers: StartWorkers) -> None:
    expired = Job.objects.enqueue(record, ["old"], expires_in=60)
    Job.objects.filter(pk=expired.pk).update(expires_at=database_now("default") - datetime.timedelta(seconds=1))
    Job.objects.enqueue_many(Job.objects.build(record, [f"new-{n}"], expires_in=600) for n in range(30))
    workers = start_workers("--burst", "--processes", "2")
    assert workers.wait(timeout=120) == 0, workers.text()
    assert Receipt.objects.count() == 30
    assert not Receipt.objects.filter(token="old").exists()
    assert Job.objects.get(pk=expired.pk).attempts == 0
