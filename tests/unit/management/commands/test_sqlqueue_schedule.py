"""``manage.py sqlqueue_schedule``: the entries and their next run times, from settings."""

from __future__ import annotations

import datetime
import itertools
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import DEFAULT_DB_ALIAS
from django.test import override_settings

from django_sqlqueue.db import recurrence
from django_sqlqueue.models import Schedule
from django_sqlqueue.rules.recurrence import parse_schedule
from tests.support.zones import stored

NOOP = "tests.testapp.tasks.noop"
SCHEDULE = {
    "nightly": {"task": NOOP, "cron": "30 2 * * *", "tz": "Europe/Paris"},
    "ping": {"task": NOOP, "every": 30, "missed": "all", "enabled": False},
}


def schedule(*args: str) -> str:
    out = StringIO()
    call_command("sqlqueue_schedule", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
@override_settings(SQLQUEUE_SCHEDULE=SCHEDULE)
def test_lists_each_entry_with_its_next_run_times_in_its_time_zone() -> None:
    lines = schedule("--count", "3").splitlines()
    assert lines[0] == f"nightly: {NOOP}, 30 2 * * * (Europe/Paris), missed=latest, enabled"
    assert all(re.fullmatch(r"  \S+ 02:30:00 CES?T \(Europe/Paris\)", line) for line in lines[1:4]), lines
    nightly = [datetime.datetime.strptime(line.strip()[:19], "%Y-%m-%d %H:%M:%S") for line in lines[1:4]]
    assert [later - earlier for earlier, later in itertools.pairwise(nightly)] == [datetime.timedelta(days=1)] * 2
    assert lines[4] == f"ping: {NOOP}, every 30 s (UTC), missed=all, disabled in settings"
    assert len(lines) == 8


@pytest.mark.django_db
@override_settings(SQLQUEUE_SCHEDULE=SCHEDULE)
def test_shows_the_last_run_when_the_table_is_there() -> None:
    recurrence.sync(parse_schedule(SCHEDULE, "UTC"), DEFAULT_DB_ALIAS)
    job = recurrence.run_now(Schedule.objects.get(key="nightly"), DEFAULT_DB_ALIAS)
    lines = schedule("--count", "1").splitlines()
    assert lines[1].startswith("  last run: ")
    assert lines[1].endswith(f" (job #{job.pk})")
    assert lines[4] == "  last run: never"


@pytest.mark.django_db
@pytest.mark.parametrize("use_tz", [True, False])
@pytest.mark.parametrize("time_zone", ["UTC", "America/New_York"])
def test_times_are_shown_in_the_entrys_zone_as_the_admin_shows_them(use_tz: bool, time_zone: str) -> None:
    """The cron entry's wall time, in its zone, whatever the project's: 03:00 on both
    sides of the night Europe/Paris's clocks go back, as the admin shows it."""
    entries = {"nightly": {"task": NOOP, "cron": "0 3 * * *", "tz": "Europe/Paris"}}
    with override_settings(SQLQUEUE_SCHEDULE=entries, USE_TZ=use_tz, TIME_ZONE=time_zone):
        recurrence.sync(parse_schedule(entries, "UTC"), DEFAULT_DB_ALIAS)
        last_run = datetime.datetime(2026, 10, 25, 2, tzinfo=datetime.timezone.utc)  # 03:00 CET
        Schedule.objects.update(last_run_at=stored(last_run))
        lines = schedule("--count", "3").splitlines()
    assert lines[1] == "  last run: 2026-10-25 03:00:00 CET (Europe/Paris)"
    assert all(re.fullmatch(r"  \S+ 03:00:00 CES?T \(Europe/Paris\)", line) for line in lines[2:5]), lines


@pytest.mark.django_db  # it looks for schedules defined in the admin
@override_settings(SQLQUEUE_SCHEDULE={})
def test_an_empty_schedule() -> None:
    assert schedule() == "SQLQUEUE_SCHEDULE is empty: no recurring jobs.\n"


@override_settings(SQLQUEUE_SCHEDULE={"bad": {"task": NOOP, "cron": "99 * * * *"}})
def test_a_bad_entry_is_an_error() -> None:
    with pytest.raises(CommandError, match=r"SQLQUEUE_SCHEDULE\['bad'\]: cron '99 \* \* \* \*' is not valid"):
        call_command("sqlqueue_schedule", skip_checks=True)


@pytest.mark.django_db
@override_settings(SQLQUEUE_SCHEDULE={"nightly": SCHEDULE["nightly"]})
def test_lists_the_schedules_defined_in_the_admin_after_the_settings() -> None:
    recurrence.define(
        Schedule(key="weekly", task=NOOP, cron="0 9 * * 1", tz="Asia/Tokyo", kwargs={"a": 1}), DEFAULT_DB_ALIAS
    )
    recurrence.define(Schedule(key="gone", task=NOOP, every=60, tz="UTC"), DEFAULT_DB_ALIAS)
    Schedule.objects.filter(key="gone").update(tz="Mars/Olympus")
    lines = schedule("--count", "1").splitlines()
    assert lines[0] == f"nightly: {NOOP}, 30 2 * * * (Europe/Paris), missed=latest, enabled"
    assert lines[2] == (
        "gone: defined in the admin, enqueues nothing: "
        "Schedule['gone']: 'Mars/Olympus' is not a time zone name, such as 'Europe/Paris'."
    )
    assert lines[3] == f"weekly: {NOOP}, 0 9 * * 1 (Asia/Tokyo), missed=latest, enabled, defined in the admin"
    assert lines[4] == "  last run: never"
    assert re.fullmatch(r"  \S+ 09:00:00 JST \(Asia/Tokyo\)", lines[5])
