"""Retention with real ``runworkers`` processes: ``SQLQUEUE_RETENTION = {"SUCCESSFUL": 0}``
leaves no successful row, and the supervisor prunes what is past its retention, and only
that, while its workers run."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.finished import finished_job
from tests.support.workers import Workers, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import fail, record

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

StartWorkers = Callable[..., Workers]
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)


def test_successes_kept_for_no_time_leave_no_successful_row(start_workers: StartWorkers) -> None:
    Job.objects.enqueue_many(Job.objects.build(record, [f"token-{index}"]) for index in range(300))
    failures = {Job.objects.enqueue(fail, ["no"], max_attempts=1).pk for _ in range(5)}
    workers = start_workers(
        "--burst", "--processes", "2", "--threads", "2", SQLQUEUE_RETENTION=json.dumps({"SUCCESSFUL": 0})
    )
    assert workers.wait(timeout=120) == 0, workers.text()
    assert Receipt.objects.count() == 300
    assert set(Job.objects.values_list("pk", "status")) == {(pk, JobStatus.FAILED) for pk in failures}


def test_the_supervisor_prunes_what_is_past_its_retention_while_workers_run(start_workers: StartWorkers) -> None:
    past = {finished_job(JobStatus.SUCCESSFUL, 2 * DAY) for _ in range(40)}
    past |= {finished_job(JobStatus.CANCELLED, 8 * DAY) for _ in range(10)}
    kept = {finished_job(JobStatus.SUCCESSFUL, 23 * HOUR) for _ in range(10)}
    kept |= {finished_job(JobStatus.CANCELLED, 6 * DAY) for _ in range(10)}
    kept |= {finished_job(JobStatus.FAILED, 3650 * DAY) for _ in range(10)}
    kept |= {Job.objects.enqueue(record, ["later"], delay=3600).pk for _ in range(5)}
    Job.objects.enqueue_many(Job.objects.build(record, [f"token-{index}"]) for index in range(200))
    workers = start_workers("--processes", "2", SQLQUEUE_RETENTION=json.dumps({"FAILED": None}))

    wait_until(
        lambda: Receipt.objects.count() == 200 and not Job.objects.filter(pk__in=past).exists(),
        timeout=90,
        why=workers.text,
    )
    assert workers.stop() == 0, workers.text()
    assert kept <= set(Job.objects.values_list("pk", flat=True))
    assert Job.objects.exclude(pk__in=kept).exclude(status=JobStatus.SUCCESSFUL).count() == 0
    assert Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == 210
