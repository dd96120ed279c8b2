"""Recurring jobs' statements (``db/recurrence.py``): rows written from settings, due
ticks enqueued once, the compare-and-set that refuses a stale read."""

from __future__ import annotations

import datetime
import itertools
import zoneinfo
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.utils import timezone

from django_sqlqueue.db import recurrence
from django_sqlqueue.db.building import HOOK_ERRORS
from django_sqlqueue.models import Job, Schedule
from django_sqlqueue.rules.recurrence import Entry, parse_schedule
from tests.support.racing import at_once
from tests.support.zones import COMBINATIONS, zones

pytestmark = pytest.mark.django_db

DB = DEFAULT_DB_ALIAS
NOOP = "tests.testapp.tasks.noop"
MINUTE = datetime.timedelta(minutes=1)


def entries(**raw: dict[str, object]) -> dict[str, Entry]:
    return parse_schedule(raw, "UTC")


def rewind(key: str, seconds: float) -> Schedule:
    """Make ``key``'s row look as if it last ticked ``seconds`` ago, and due."""
    past = timezone.now() - datetime.timedelta(seconds=seconds)
    Schedule.objects.filter(key=key).update(last_tick_at=past, next_tick_at=past)
    return Schedule.objects.get(key=key)


def test_sync_creates_rows_that_tick_from_now_on() -> None:
    before = timezone.now() - datetime.timedelta(seconds=5)
    recurrence.sync(entries(ping={"task": NOOP, "every": 30, "kwargs": {"a": 1}, "queue": "mail"}), DB)
    row = Schedule.objects.get()
    assert (row.key, row.task, row.expression, row.kwargs, row.queue, row.enabled) == (
        "ping",
        NOOP,
        "every 30 s",
        {"a": 1},
        "mail",
        True,
    )
    assert row.last_tick_at > before
    assert row.next_tick_at is not None
    assert datetime.timedelta(0) < row.next_tick_at - row.last_tick_at <= datetime.timedelta(seconds=30)
    assert recurrence.tick(DB) == 0


def test_sync_updates_keeps_the_last_tick_and_deletes_removed_entries() -> None:
    recurrence.sync(entries(ping={"task": NOOP, "every": 30}, old={"task": NOOP, "every": 5}), DB)
    last_tick = rewind("ping", 3600).last_tick_at
    recurrence.sync(entries(ping={"task": NOOP, "cron": "0 * * * *", "missed": "all"}), DB)
    row = Schedule.objects.get()
    assert (row.key, row.expression, row.every, row.missed, row.last_tick_at) == (
        "ping",
        "0 * * * *",
        None,
        "all",
        last_tick,
    )


def test_sync_keeps_an_admin_disable_unless_settings_disable() -> None:
    recurrence.sync(entries(ping={"task": NOOP, "every": 30}), DB)
    Schedule.objects.update(enabled=False)
    recurrence.sync(entries(ping={"task": NOOP, "every": 30}), DB)
    assert not Schedule.objects.get().enabled
    recurrence.sync(entries(new={"task": NOOP, "every": 30, "enabled": False}), DB)
    assert not Schedule.objects.get(key="new").enabled


def test_a_due_tick_enqueues_one_job_due_at_its_tick() -> None:
    recurrence.sync(entries(ping={"task": NOOP, "every": 60, "args": [1], "kwargs": {"b": 2}, "priority": 5}), DB)
    rewind("ping", 61)
    assert recurrence.tick(DB) == 1
    job = Job.objects.get()
    row = Schedule.objects.get()
    assert (job.task, job.args, job.kwargs, job.priority) == (NOOP, [1], {"b": 2}, 5)
    assert job.run_at == row.last_tick_at == row.last_run_at
    assert job.run_at.timestamp() % 60 == 0
    assert row.last_job_id == job.pk
    assert row.next_tick_at == row.last_tick_at + datetime.timedelta(seconds=60)
    assert recurrence.tick(DB) == 0


def test_an_enqueue_hook_raising_on_a_tick_is_logged_and_the_tick_enqueued_without_it(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A hook written for web requests raises on the runner's tick: the tick still fires
    once, its job without the hook's changes, rather than the tick failing every second."""
    recurrence.sync(entries(ping={"task": NOOP, "every": 60, "priority": 5}), DB)
    rewind("ping", 61)
    settings.SQLQUEUE_ENQUEUE_HOOKS = ["tests.support.middleware.request_scoped"]
    assert recurrence.tick(DB) == 1
    job = Job.objects.get()
    assert job.meta is not None
    assert (job.priority, list(job.meta)) == (5, [HOOK_ERRORS])
    assert job.meta[HOOK_ERRORS][0]["hook"] == "tests.support.middleware.request_scoped"
    assert Schedule.objects.get().last_job_id == job.pk
    assert "SQLQUEUE_ENQUEUE_HOOKS: tests.support.middleware.request_scoped" in caplog.text
    assert recurrence.tick(DB) == 0


def test_a_stale_read_enqueues_nothing() -> None:
    """Two supervisors read the same due row: the second's compare-and-set fails."""
    recurrence.sync(entries(ping={"task": NOOP, "every": 60}), DB)
    rewind("ping", 61)
    read_by_both = recurrence.due_rows(DB)
    assert recurrence.tick(DB) == 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recurrence, "due_rows", lambda using: read_by_both)
        assert recurrence.tick(DB) == 0
    assert Job.objects.count() == 1


def test_missed_all_enqueues_each_tick_with_its_time() -> None:
    recurrence.sync(entries(ping={"task": NOOP, "every": 60, "missed": "all"}), DB)
    # From a whole minute (every 60 s ticks on them): 5 minutes hold exactly 5 ticks,
    # whatever second of the minute the test runs in.
    past = timezone.now().replace(second=0, microsecond=0) - datetime.timedelta(minutes=5)
    Schedule.objects.filter(key="ping").update(last_tick_at=past, next_tick_at=past)
    assert recurrence.tick(DB) == 5
    run_ats = sorted(Job.objects.values_list("run_at", flat=True))
    assert [later - earlier for earlier, later in itertools.pairwise(run_ats)] == [datetime.timedelta(seconds=60)] * 4
    assert Schedule.objects.get().last_job_id == Job.objects.latest("pk").pk


def test_a_disabled_row_never_fires() -> None:
    recurrence.sync(entries(ping={"task": NOOP, "every": 60, "enabled": False}), DB)
    rewind("ping", 120)
    assert recurrence.tick(DB) == 0
    assert not Job.objects.exists()


def test_an_unregistered_task_never_enqueues_and_stays_due(caplog: pytest.LogCaptureFixture) -> None:
    recurrence.sync(entries(gone={"task": "no.such.task", "every": 60}), DB)
    row = rewind("gone", 120)
    assert recurrence.tick(DB) == 0
    assert not Job.objects.exists()
    assert Schedule.objects.get().last_tick_at == row.last_tick_at
    assert "Schedule 'gone' did not enqueue: UnknownTaskError" in caplog.text


def test_arguments_the_task_cannot_take_never_enqueue(caplog: pytest.LogCaptureFixture) -> None:
    """The tick is refused (and sqlqueue.E037 says so at check time), not a job that fails every run."""
    welcome = "tests.testapp.tasks.send_welcome"
    recurrence.sync(entries(welcome={"task": welcome, "every": 60, "kwargs": {"user": 1}}), DB)
    rewind("welcome", 120)
    assert recurrence.tick(DB) == 0
    assert not Job.objects.exists()
    assert (
        f"Schedule 'welcome' did not enqueue: InvalidJobError: Cannot enqueue {welcome}: its arguments do not fit "
        "send_welcome(user_id, *, greeting='Hello'): missing a required argument: 'user_id', and got an unexpected "
        "keyword argument 'user'." in caplog.text
    )


def test_a_problem_is_logged_once_until_its_row_fires(caplog: pytest.LogCaptureFixture) -> None:
    recurrence.sync(entries(gone={"task": "no.such.task", "every": 60}), DB)
    rewind("gone", 120)
    logged: set[tuple[str, str]] = set()
    for _ in range(3):  # a supervisor ticks every second
        assert recurrence.tick(DB, logged) == 0
    assert caplog.text.count("did not enqueue") == 1
    Schedule.objects.filter(key="gone").update(task=NOOP)  # deployed: the task is there now
    assert recurrence.tick(DB, logged) == 1
    assert logged == set()


def test_run_now_enqueues_one_job_and_leaves_the_ticks_alone() -> None:
    recurrence.sync(entries(ping={"task": NOOP, "every": 3600, "kwargs": {"x": 1}}), DB)
    row = Schedule.objects.get()
    job = recurrence.run_now(row, DB)
    after = Schedule.objects.get()
    assert (job.task, job.kwargs) == (NOOP, {"x": 1})
    assert after.last_job_id == job.pk
    assert after.last_run_at is not None
    assert (after.last_tick_at, after.next_tick_at) == (row.last_tick_at, row.next_tick_at)


def test_enable_ticks_from_now_on() -> None:
    recurrence.sync(entries(ping={"task": NOOP, "every": 60, "missed": "all", "enabled": False}), DB)
    rewind("ping", 3600)
    recurrence.enable(list(Schedule.objects.all()), DB)
    row = Schedule.objects.get()
    assert row.enabled
    assert row.last_tick_at > timezone.now() - datetime.timedelta(seconds=30)
    assert recurrence.tick(DB) == 0


def test_without_use_tz_ticks_are_stored_as_naive_local_times(settings: Any) -> None:
    settings.USE_TZ = False
    recurrence.sync(entries(ping={"task": NOOP, "every": 60}), DB)
    rewind("ping", 61)
    assert recurrence.tick(DB) == 1
    job = Job.objects.get()
    row = Schedule.objects.get()
    assert timezone.is_naive(job.run_at)
    assert job.run_at == row.last_tick_at
    assert row.next_tick_at == row.last_tick_at + datetime.timedelta(seconds=60)


@pytest.mark.parametrize(("use_tz", "time_zone", "server"), COMBINATIONS)
def test_ticks_fire_at_their_instant_in_every_time_zone(use_tz: bool, time_zone: str, server: str | None) -> None:
    """Issue 36, case 4: on MariaDB with ``USE_TZ = False`` and ``TIME_ZONE`` Asia/Tokyo,
    ``0 3 * * *`` in Asia/Tokyo fired at 12:00 JST. A tick of the last minute fires, once,
    and the next, less than a minute ahead, does not; a tick in an activated zone of
    another offset (a request's) is stored as the project's local time."""
    with zones(use_tz, time_zone, server), timezone.override("Pacific/Kiritimati"):
        daily: dict[str, object] = {"task": NOOP, "cron": "0 3 * * *", "tz": "Asia/Tokyo"}
        recurrence.sync(entries(minutely={"task": NOOP, "cron": "* * * * *", "tz": "Asia/Tokyo"}, daily=daily), DB)
        next_tick_at = Schedule.objects.get(key="daily").next_tick_at
        assert next_tick_at is not None
        next_daily = instant(next_tick_at)
        tokyo = next_daily.astimezone(zoneinfo.ZoneInfo("Asia/Tokyo"))
        assert (tokyo.hour, tokyo.minute) == (3, 0)
        assert datetime.timedelta(0) < next_daily - instant(timezone.now()) <= datetime.timedelta(days=1)
        rewind("minutely", 61)
        assert recurrence.tick(DB) == 1
        run_at = Job.objects.get().run_at
        assert run_at.second == 0
        assert datetime.timedelta(0) <= timezone.now() - run_at <= MINUTE
        assert recurrence.tick(DB) == 0


def instant(stored: datetime.datetime) -> datetime.datetime:
    """A stored time as an instant: naive ones are ``TIME_ZONE``'s local time."""
    return stored if timezone.is_aware(stored) else timezone.make_aware(stored, timezone.get_default_timezone())


def defined_here(key: str, **raw: Any) -> Schedule:
    """A schedule defined in the admin, written as the admin's form writes it."""
    entry = parse_schedule({key: raw}, "UTC")[key]
    row = Schedule(
        key=key,
        task=entry.task,
        cron=entry.cron or "",
        every=None if entry.every is None else entry.every.total_seconds(),
        tz=entry.tz,
        args=entry.args,
        kwargs=entry.kwargs,
        missed=entry.missed,
        enabled=entry.enabled,
    )
    recurrence.define(row, DB)
    return Schedule.objects.get(key=key)


def test_sync_leaves_the_admins_schedules_alone_and_logs_a_name_they_share(caplog: pytest.LogCaptureFixture) -> None:
    here = defined_here("mine", task=NOOP, every=60, kwargs={"x": 1})
    recurrence.sync(entries(ping={"task": NOOP, "every": 30}, mine={"task": NOOP, "every": 5}), DB)
    assert sorted(Schedule.objects.values_list("key", "defined_in")) == [("mine", "admin"), ("ping", "settings")]
    mine = Schedule.objects.get(key="mine")
    assert (mine.every, mine.kwargs, mine.revision) == (60, {"x": 1}, here.revision)
    assert "SQLQUEUE_SCHEDULE['mine'] is not written: a schedule defined in the admin has its name." in caplog.text
    recurrence.sync({}, DB)
    assert list(Schedule.objects.values_list("key", flat=True)) == ["mine"]


def test_a_tick_read_before_an_edit_enqueues_nothing_and_the_next_enqueues_the_edit() -> None:
    """An edit made during a tick: the tick read the row, the edit commits, then the tick
    writes. Its compare-and-set fails (the revision moved on); the next check fires the
    tick once, as edited."""
    row = defined_here("mine", task=NOOP, every=3600, kwargs={"v": 1})
    rewind("mine", 3601)
    read_during_the_edit = recurrence.due_rows(DB)
    row.kwargs = {"v": 2}
    recurrence.define(row, DB)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recurrence, "due_rows", lambda using: read_during_the_edit)
        assert recurrence.tick(DB) == 0
    assert recurrence.tick(DB) == 1
    assert recurrence.tick(DB) == 0
    assert list(Job.objects.values_list("kwargs", flat=True)) == [{"v": 2}]


def test_an_edit_saved_from_a_page_read_before_a_tick_does_not_fire_it_again() -> None:
    """The page was opened before the tick fired and saved after: the edit keeps the
    locked row's last tick, not the one the page read."""
    opened = defined_here("mine", task=NOOP, every=3600)
    rewind("mine", 3601)
    opened = Schedule.objects.get(key="mine")
    read = opened.last_tick_at
    assert recurrence.tick(DB) == 1
    opened.kwargs = {"v": 2}
    recurrence.define(opened, DB)
    assert recurrence.tick(DB) == 0
    row = Schedule.objects.get()
    assert row.last_tick_at > read
    assert row.last_job_id == Job.objects.get().pk


def test_a_row_that_is_not_valid_is_logged_and_the_others_still_fire(caplog: pytest.LogCaptureFixture) -> None:
    defined_here("broken", task=NOOP, every=60)
    defined_here("fine", task=NOOP, every=60)
    Schedule.objects.filter(key="broken").update(tz="Mars/Olympus")  # written around the form
    rewind("broken", 61)
    rewind("fine", 61)
    assert recurrence.tick(DB) == 1
    assert "Schedule 'broken' did not enqueue: ImproperlyConfigured: Schedule['broken']: 'Mars/Olympus'" in caplog.text
    assert recurrence.row_problem(Schedule.objects.get(key="broken")) == (
        "Schedule['broken']: 'Mars/Olympus' is not a time zone name, such as 'Europe/Paris'."
    )


def test_a_run_now_during_a_tick_is_kept_among_its_last_jobs() -> None:
    defined_here("mine", task=NOOP, every=3600)
    rewind("mine", 3601)
    read_before = recurrence.due_rows(DB)
    ran_now = recurrence.run_now(Schedule.objects.get(), DB)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recurrence, "due_rows", lambda using: read_before)
        assert recurrence.tick(DB) == 0
    assert recurrence.tick(DB) == 1
    ticked = Job.objects.latest("pk")
    assert Schedule.objects.get().recent_jobs == [ticked.pk, ran_now.pk]


def test_a_row_keeps_its_last_jobs_newest_first() -> None:
    defined_here("mine", task=NOOP, every=60, missed="all")
    past = timezone.now().replace(second=0, microsecond=0) - datetime.timedelta(minutes=12)
    Schedule.objects.update(last_tick_at=past, next_tick_at=past)
    assert recurrence.tick(DB) == 12
    newest = list(Job.objects.order_by("-run_at").values_list("pk", flat=True))
    assert Schedule.objects.get().recent_jobs == newest[: recurrence.RECENT_JOBS]


@pytest.mark.django_db(transaction=True)
def test_two_supervisors_ticking_at_once_enqueue_each_tick_once() -> None:
    """Two schedulers, each on its own connection, check the same due row at the same
    moment, round after round: one enqueues the round's tick (two, when the rewound hour
    holds two), the other nothing, and no tick has two jobs."""
    defined_here("mine", task=NOOP, every=3600, missed="all")
    for _ in range(5):
        rewind("mine", 3601)
        before = list(Job.objects.values_list("pk", flat=True))
        loser, winner = sorted(at_once(2, lambda index: recurrence.tick(DB)))
        run_ats = list(Job.objects.exclude(pk__in=before).values_list("run_at", flat=True))
        assert loser == 0
        assert len(run_ats) == len(set(run_ats)) == winner >= 1
