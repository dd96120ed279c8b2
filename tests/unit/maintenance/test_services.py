"""Each maintenance service's turn on the database: what it writes and when it asks to
run again (``maintenance/rescue.py``, ``schedules.py``, ``rollups.py``, ``pruning.py``)."""

from __future__ import annotations

import datetime
from collections import Counter

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.test import override_settings

from django_sqlqueue.conf import conf
from django_sqlqueue.db import recurrence, rollup
from django_sqlqueue.maintenance.pruning import PRUNE_SECONDS, PruningService
from django_sqlqueue.maintenance.rescue import RESCUE_SECONDS, Rescued, RescueService
from django_sqlqueue.maintenance.rollups import ROLLUP_BACKLOG_SECONDS, ROLLUP_SECONDS, RollupsService
from django_sqlqueue.maintenance.schedules import SCHEDULE_SECONDS, SchedulesService, sync_settings
from django_sqlqueue.models import FinishedHour, Job, JobStatus, Schedule
from tests.support.finished import finished_job
from tests.unit.maintenance.test_rescue import hold, register

pytestmark = pytest.mark.django_db(transaction=True)  # the services close their connections

NOOP = "tests.testapp.tasks.noop"
DB = DEFAULT_DB_ALIAS


def test_the_rescue_service_gives_back_expired_workers_jobs_and_says_so() -> None:
    register("dead", seconds_ago=120)
    hold("dead", 2)
    heard: list[Rescued] = []
    service = RescueService(heard.append)
    assert service.run(0.0) == service.interval == min(conf.SQLQUEUE_LEASE / 2, RESCUE_SECONDS)
    assert heard == [Rescued(Counter({"retried": 2}))]
    assert set(Job.objects.values_list("status", flat=True)) == {JobStatus.READY}


@override_settings(SQLQUEUE_SCHEDULE={"ping": {"task": NOOP, "every": 60}})
def test_the_settings_are_synced_and_a_due_tick_enqueues_each_second() -> None:
    sync_settings()
    assert list(Schedule.objects.values_list("key", flat=True)) == ["ping"]
    service = SchedulesService()
    assert service.run(0.0) == SCHEDULE_SECONDS
    assert not Job.objects.exists()
    past = Schedule.objects.get().last_tick_at - datetime.timedelta(seconds=61)
    Schedule.objects.update(last_tick_at=past, next_tick_at=past)
    service.run(1.0)
    assert list(Job.objects.values_list("task", flat=True)) == [NOOP]


@override_settings(SQLQUEUE_SCHEDULE={})
def test_a_running_service_enqueues_an_admin_edit_at_its_next_turn() -> None:
    """No restart: the service holds no entry between turns, and a supervisor's start-up
    sync leaves the admin's schedules alone."""
    recurrence.define(Schedule(key="mine", task=NOOP, every=3600, tz="UTC", kwargs={"v": 1}), DB)
    sync_settings()
    service = SchedulesService()
    assert service.run(0.0) == SCHEDULE_SECONDS
    row = Schedule.objects.get()
    row.kwargs = {"v": 2}
    recurrence.define(row, DB)
    past = Schedule.objects.get().last_tick_at - datetime.timedelta(seconds=3601)
    Schedule.objects.update(last_tick_at=past, next_tick_at=past)
    service.run(1.0)
    assert list(Job.objects.values_list("kwargs", flat=True)) == [{"v": 2}]


def test_rollups_count_a_day_a_turn_sooner_while_hours_are_left() -> None:
    finished_job(JobStatus.SUCCESSFUL, datetime.timedelta(hours=3))
    service = RollupsService()
    turns = [service.run(0.0)]
    while turns[-1] == ROLLUP_BACKLOG_SECONDS and len(turns) < 20:
        turns.append(service.run(0.0))
    # The window's 168 hours, 24 a turn.
    assert turns == [ROLLUP_BACKLOG_SECONDS] * (len(turns) - 1) + [ROLLUP_SECONDS]
    assert len(turns) >= rollup.WINDOW // rollup.BATCH_HOURS
    assert rollup.hours(Job.objects.on_queue_db().db).missing == []
    assert FinishedHour.objects.filter(queue="", succeeded=1).count() == 1


@override_settings(SQLQUEUE_RETENTION={JobStatus.SUCCESSFUL: 3600})
def test_pruning_deletes_what_is_past_retention_and_waits_the_interval_once_done() -> None:
    old = finished_job(JobStatus.SUCCESSFUL, datetime.timedelta(days=9))  # past the chart's window
    kept = finished_job(JobStatus.SUCCESSFUL, datetime.timedelta(minutes=1))
    service = PruningService()
    turns = [service.run(0.0)]
    while turns[-1] < PRUNE_SECONDS and len(turns) < 20:
        turns.append(service.run(0.0))
    assert turns[-1] >= PRUNE_SECONDS
    assert set(Job.objects.values_list("pk", flat=True)) == {kept}
    assert old != kept


def test_the_expiry_service_ends_expired_jobs_and_keeps_its_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    from django_sqlqueue.db import expiry
    from django_sqlqueue.db.clock import database_now
    from django_sqlqueue.maintenance.expiry import EXPIRE_BACKLOG_SECONDS, EXPIRE_CHUNKS, EXPIRE_SECONDS, ExpiryService
    from tests.testapp.tasks import record

    made = [Job.objects.enqueue(record, [str(n)], expires_in=60) for n in range(2 * EXPIRE_CHUNKS + 1)]
    Job.objects.update(expires_at=database_now("default") - datetime.timedelta(seconds=1))
    monkeypatch.setattr(expiry, "BATCH_SIZE", 2)
    service = ExpiryService()
    # Five chunks of two: more may be left, so the next turn comes sooner.
    assert service.run(0.0) == EXPIRE_BACKLOG_SECONDS
    assert Job.objects.filter(end_reason="expired").count() == 2 * EXPIRE_CHUNKS
    assert service.run(0.0) == EXPIRE_SECONDS
    assert Job.objects.filter(end_reason="expired").count() == len(made)
