"""The figures ``stats.py`` reads for the admin's overview, ``sqlqueue_health`` and
``sqlqueue_stats``."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection
from django.utils import timezone

from django_sqlqueue.management.commands.sqlqueue_stats import as_tables
from django_sqlqueue.models import Job, JobStatus, Worker
from django_sqlqueue.reporting.stats import Recent, live_workers, recent_outcomes, snapshot, whole_seconds
from tests.support.admin_helpers import make_job

pytestmark = pytest.mark.django_db


def test_recent_outcomes_in_the_last_minute_and_hour() -> None:
    now = timezone.now()
    for status, minutes_ago in [
        (JobStatus.SUCCESSFUL, 0),
        (JobStatus.FAILED, 0),
        (JobStatus.CANCELLED, 10),
        (JobStatus.FAILED, 30),
        (JobStatus.SUCCESSFUL, 61),  # over an hour ago: not counted
    ]:
        make_job(status, finished_at=now - datetime.timedelta(minutes=minutes_ago))
    make_job(JobStatus.FAILED, queue="mail", finished_at=now - datetime.timedelta(hours=2))
    assert recent_outcomes(Job.objects.get_queryset()) == {
        "default": Recent(finished_last_minute=2, failed_last_minute=1, finished_last_hour=4, failed_last_hour=2)
    }


def test_live_workers_with_their_counters_and_heartbeat_age() -> None:
    Worker.objects.create(name="b", host="h2", pid=2, queues=["mail"], jobs_succeeded=5, candidates_lost=7)
    Worker.objects.create(name="a", host="h1", pid=1, jobs_failed=1)
    Worker.objects.create(name="dead", host="h1", pid=3)
    Worker.objects.filter(name="dead").update(heartbeat_at=timezone.now() - datetime.timedelta(hours=1))
    a, b = live_workers(connection.alias)
    assert (a.name, a.host, a.pid, a.queues, a.jobs_succeeded, a.jobs_failed, a.candidates_lost) == (
        "a",
        "h1",
        1,
        None,
        0,
        1,
        0,
    )
    assert (b.name, b.queues, b.jobs_succeeded, b.candidates_lost) == ("b", ["mail"], 5, 7)
    assert datetime.timedelta(0) <= a.heartbeat_age < datetime.timedelta(minutes=1)


def test_a_snapshot_shows_every_queue_that_has_jobs_by_the_database_clock() -> None:
    make_job(run_at=timezone.now() - datetime.timedelta(minutes=5))
    make_job(JobStatus.SUCCESSFUL, queue="mail", finished_at=timezone.now())
    before = timezone.now()
    figures = snapshot(connection.alias)
    assert abs(figures.now - before) < datetime.timedelta(minutes=1)
    default, mail = figures.queues
    assert (default.queue, default.counts, default.recent) == ("default", {JobStatus.READY: 1}, Recent())
    assert default.lag is not None
    assert datetime.timedelta(minutes=5) <= default.lag < datetime.timedelta(minutes=6)
    assert (mail.queue, mail.lag, mail.recent.finished_last_minute) == ("mail", None, 1)
    assert figures.workers == []


def test_whole_seconds() -> None:
    assert whole_seconds(datetime.timedelta(hours=25, seconds=3.9)) == "1 day, 1:00:03"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's estimates (elsewhere: test_counting.py)")
def test_on_postgresql_a_big_table_s_finished_statuses_are_estimated() -> None:
    for queue in ("default", "mail"):
        for status in [JobStatus.SUCCESSFUL] * 20 + [JobStatus.FAILED] * 10:
            make_job(status, queue=queue, finished_at=timezone.now() - datetime.timedelta(hours=2))
    make_job(queue="default")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE django_sqlqueue_job")  # in the test's transaction, which rolls it back
    assert [queue.estimated for queue in snapshot(connection.alias).queues] == [(), ()]  # a small table
    default, mail = snapshot(connection.alias, estimate_above=0).queues
    estimated = (JobStatus.SUCCESSFUL, JobStatus.FAILED, JobStatus.CANCELLED)
    finished = {JobStatus.SUCCESSFUL: 20, JobStatus.FAILED: 10, JobStatus.CANCELLED: 0}
    # Rows x the queue's share x the status's share: 61 x 31/61 x 40/61 is 20.3.
    assert (default.counts, default.estimated) == (
        {**finished, JobStatus.READY: 1},
        estimated,
    )
    assert (mail.counts, mail.estimated) == (
        {JobStatus.SUCCESSFUL: 20, JobStatus.FAILED: 10, JobStatus.CANCELLED: 0},
        estimated,
    )
    assert as_tables(snapshot(connection.alias, estimate_above=0)).splitlines()[3].split()[:7] == [
        "default",
        "0",
        "1",
        "0",
        "~20",
        "~10",
        "~0",
    ]
