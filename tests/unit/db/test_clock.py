"""The database's clock (``db/clock.py``): it agrees with the times Django writes for
every ``USE_TZ``, ``TIME_ZONE`` and server time zone, so that a job runs when it was
asked to and its times read as the project's now."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone

from django_sqlqueue import pause_queue
from django_sqlqueue.db import leadership
from django_sqlqueue.db.clock import DatabaseNowPlus, clock_sql, database_now
from django_sqlqueue.models import Job, Leader, PausedQueue, RateBucket
from tests.support.zones import COMBINATIONS, SERVER_ZONES, zones
from tests.testapp.tasks import noop, paced

pytestmark = pytest.mark.django_db

DB = DEFAULT_DB_ALIAS
MINUTE = datetime.timedelta(minutes=1)
#: How far apart two reads of "now" may be: the test's own statements in between.
CLOSE = datetime.timedelta(seconds=5)


@pytest.mark.parametrize(("use_tz", "time_zone", "server"), COMBINATIONS)
def test_a_job_runs_when_it_was_asked_to(use_tz: bool, time_zone: str, server: str | None) -> None:
    """On MariaDB with ``USE_TZ = False`` and ``TIME_ZONE`` Asia/Tokyo,
    a job due in a minute was claimable only 9 hours later, and ``enqueued_at`` was
    written in UTC."""
    with zones(use_tz, time_zone, server):
        now = timezone.now()
        assert abs(database_now(DB) - now) < CLOSE
        later = Job.objects.enqueue(noop, run_at=now + MINUTE)
        due = Job.objects.enqueue(noop, run_at=now - datetime.timedelta(seconds=1))
        delayed = Job.objects.enqueue(noop, delay=MINUTE)
        later.refresh_from_db()
        assert abs(later.enqueued_at - now) < CLOSE
        assert list(Job.objects.ready().values_list("pk", flat=True)) == [due.pk]
        in_a_minute = Job.objects.filter(run_at__lte=DatabaseNowPlus(MINUTE + CLOSE))
        assert set(in_a_minute.values_list("pk", flat=True)) == {later.pk, due.pk, delayed.pk}
        assert [job.pk for job in Job.objects.claim(worker_id="w")] == [due.pk]


def leader() -> datetime.datetime:
    leadership.acquire("h", MINUTE, DB)
    return Leader.objects.get().acquired_at


def paused() -> datetime.datetime:
    pause_queue("default")
    return PausedQueue.objects.get().paused_at


def rate_bucket() -> datetime.datetime:
    Job.objects.enqueue(paced)
    Job.objects.claim(worker_id="w")
    return RateBucket.objects.get().updated_at


@pytest.mark.parametrize("create", [leader, paused, rate_bucket])
def test_rows_the_queue_creates_hold_the_projects_now(create: Callable[[], datetime.datetime]) -> None:
    """MySQL fills a column left out of an ``INSERT`` from the table's ``DEFAULT``, which
    the migration compiled under the settings of its day (here UTC): a rate bucket made
    hours ahead of the project's clock did not refill until then."""
    server = SERVER_ZONES[connections[DB].vendor][0]
    with zones(False, "America/New_York", server):
        assert abs(create() - timezone.now()) < CLOSE


@pytest.mark.skipif(connections[DB].vendor != "sqlite", reason="SQLite compares stored times as text")
@pytest.mark.parametrize(("use_tz", "time_zone", "server"), COMBINATIONS)
def test_sqlites_clock_reads_as_django_writes_the_same_time(use_tz: bool, time_zone: str, server: str | None) -> None:
    """enqueue on SQLite reads the clock once and writes the time through Django: with
    three digits of fraction the clock ('...:00.123') sorted before the time Django wrote
    for it ('...:00.123000'), so a job enqueued for now was not due within the same
    millisecond (a claim right after an enqueue found nothing)."""
    connection = connections[DB]
    with zones(use_tz, time_zone, server), connection.cursor() as cursor:
        cursor.execute(f"SELECT {clock_sql(connection)}", [])
        (text,) = cursor.fetchone()
        written = connection.ops.adapt_datetimefield_value(database_now(DB).replace(microsecond=123000))
        assert written is not None
        assert len(text) == len(written)
        job = Job.objects.enqueue(noop)
        assert Job.objects.ready().filter(pk=job.pk).exists()
