"""The scheduling guide's entries (``mysite/recurring.py``): they pass the
system checks, and ``sqlqueue_schedule`` shows each cron tick at the wall time
it names, in its own zone, whatever the project's."""

from __future__ import annotations

import re
from io import StringIO

from django.core.management import call_command
from django.test import override_settings

from mysite.recurring import SQLQUEUE_SCHEDULE


@override_settings(SQLQUEUE_SCHEDULE=SQLQUEUE_SCHEDULE)
def test_the_entries_pass_the_system_checks(db):
    out = StringIO()
    call_command(
        "check", databases=["default"], fail_level="WARNING", stdout=out
    )
    assert out.getvalue().startswith("System check identified no issues")


@override_settings(
    SQLQUEUE_SCHEDULE=SQLQUEUE_SCHEDULE, TIME_ZONE="America/New_York"
)
def test_sqlqueue_schedule_shows_the_wall_time_of_each_tick(db):
    out = StringIO()
    call_command("sqlqueue_schedule", "--count", "3", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "nightly-report: shop.tasks.nightly_report, 0 3 * * * (Europe/Paris),"
        " missed=latest, enabled"
    )
    tick = re.compile(r"  \S+ 03:00:00 CES?T \(Europe/Paris\)")
    assert all(tick.fullmatch(line) for line in lines[1:4]), lines
