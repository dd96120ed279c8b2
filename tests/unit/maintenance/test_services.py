"""Each maintenance service's turn on the database: what it writes and when it asks to
run again (``maintenance/rescue.py``, ``schedules.py``, ``rollups.py``, ``pruning.py``)."""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.test import override_settings

from django_sqlqueue import signals
from django_sqlqueue.conf import conf
from django_sqlqueue.db import recurrence, rollup, transient
from django_sqlqueue.maintenance.pruning import PRUNE_SECONDS, PruningService
from django_sqlqueue.maintenance.rescue import RESCUE_SECONDS, Rescued, RescueService
from django_sqlqueue.maintenance.rollups import ROLLUP_BACKLOG_SECONDS, ROLLUP_SECONDS, RollupsService
from django_sqlqueue.maintenance.schedules import SCHEDULE_SECONDS, SchedulesService, sync_settings
from django_sqlqueue.models import FinishedHour, Job, JobStatus, Schedule
from tests.support.finished import finished_job
from tests.support.severed import needs_a_server, sever
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


@needs_a_server
def test_an_expiry_turn_whose_connection_drops_between_chunks_says_so_and_the_next_ends_the_rest(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Each chunk commits on its own: what the first ended stays ended, once; the turn
    logs the failure and waits its interval (no busy loop); the next turn, on a new
    connection, ends the rest."""
    from django_sqlqueue.db import expiry
    from django_sqlqueue.db.clock import database_now
    from django_sqlqueue.maintenance.expiry import EXPIRE_SECONDS, ExpiryService
    from tests.testapp.tasks import record

    made = [Job.objects.enqueue(record, [str(n)], expires_in=60) for n in range(5)]
    Job.objects.update(expires_at=database_now(DB) - datetime.timedelta(seconds=1))
    monkeypatch.setattr(expiry, "BATCH_SIZE", 2)
    chunk = expiry._chunk
    chunks: list[tuple[int, int]] = []

    def then_severed(*args: Any) -> tuple[int, int]:
        chunks.append(chunk(*args))
        sever()
        return chunks[-1]

    monkeypatch.setattr(expiry, "_chunk", then_severed)
    ended: list[int] = []
    signals.job_expired.connect(receiver := lambda sender, job, **named: ended.append(job.pk))
    try:
        service = ExpiryService()
        assert service.run(0.0) == EXPIRE_SECONDS
        assert chunks == [(2, 2)]
        assert "Expiring jobs failed (" in caplog.text
        monkeypatch.setattr(expiry, "_chunk", chunk)
        assert Job.objects.filter(end_reason="expired").count() == 2
        assert service.run(0.0) == EXPIRE_SECONDS
    finally:
        signals.job_expired.disconnect(receiver)
    assert Job.objects.filter(end_reason="expired").count() == len(made)
    assert sorted(ended) == sorted(job.pk for job in made)


@needs_a_server
@override_settings(SQLQUEUE_SCHEDULE={})
def test_a_tick_whose_connection_drops_after_one_schedule_fired_says_so_and_the_next_fires_the_edit_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Two admin schedules are due, one just edited; the connection drops once the
    first has fired. Each tick is its own transaction: the first stays fired, once; the
    turn logs the outage and waits its second (no busy loop); the next turn, on a new
    connection, fires the other as its edit says, and never the first again."""
    for key in ("first", "second"):
        recurrence.define(Schedule(key=key, task=NOOP, every=3600, tz="UTC", kwargs={"v": 1}), DB)
    edited = Schedule.objects.get(key="second")
    edited.kwargs = {"v": 2}
    recurrence.define(edited, DB)
    past = Schedule.objects.get(key="first").last_tick_at - datetime.timedelta(seconds=3601)
    Schedule.objects.update(last_tick_at=past, next_tick_at=past)
    committed = transient.retry_transient
    fired: list[int] = []

    def then_severed(using: str, work: Callable[[], int]) -> int:
        fired.append(committed(using, work))  # the tick's own transaction, committed
        sever()
        return fired[-1]

    monkeypatch.setattr(recurrence, "retry_transient", then_severed)
    service = SchedulesService()
    assert service.run(0.0) == SCHEDULE_SECONDS
    assert fired == [1]
    assert "Database error in the recurring jobs (" in caplog.text
    monkeypatch.setattr(recurrence, "retry_transient", committed)
    assert list(Job.objects.values_list("kwargs", flat=True)) == [{"v": 1}]
    assert service.run(1.0) == SCHEDULE_SECONDS
    assert service.run(2.0) == SCHEDULE_SECONDS
    assert sorted(Job.objects.values_list("kwargs", flat=True), key=str) == [{"v": 1}, {"v": 2}]
