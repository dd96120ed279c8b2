"""How the admin shows a time (``admin/times.py``, and the ``when`` filter of
``templatetags/sqlqueue_admin.py``)."""

from __future__ import annotations

import datetime
import re
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.template import Context, Template
from django.utils import timezone

from django_sqlqueue.admin import times

NOW = datetime.datetime(2026, 3, 10, 12, 0, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize(
    ("offset", "wording"),
    [
        (datetime.timedelta(0), "now"),
        (datetime.timedelta(seconds=0.4), "now"),
        (datetime.timedelta(seconds=-12), "12 s ago"),
        (datetime.timedelta(minutes=-3, seconds=-10), "3 min ago"),
        (datetime.timedelta(minutes=59, seconds=50), "in 60 min"),
        (datetime.timedelta(hours=1, minutes=50), "in 2 h"),
        (datetime.timedelta(hours=-30), "1 d ago"),
        (datetime.timedelta(hours=-37), "2 d ago"),
        (datetime.timedelta(days=3, hours=13), "in 4 d"),
        (datetime.timedelta(days=-800), "2 y ago"),
    ],
)
def test_relative_wording(offset: datetime.timedelta, wording: str) -> None:
    assert times.relative(NOW + offset, NOW) == wording


def shown(value: datetime.datetime | None, **options: Any) -> dict[str, str]:
    """The parts of ``times.when(value)``: its text, its title and its datetime attribute."""
    element = r'<time class="sqlqueue-time" datetime="(.*)" title="(.*)">(.*)</time>(.*)'
    match = re.fullmatch(element, times.when(value, **options))
    assert match is not None
    return dict(zip(("datetime", "title", "text", "after"), match.groups(), strict=True))


def test_the_exact_time_and_its_zone_are_in_the_title(settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Paris"
    value = timezone.now() - datetime.timedelta(minutes=3, seconds=2)
    local = value.astimezone(ZoneInfo("Europe/Paris"))
    parts = shown(value)
    assert parts["text"] == "3 min ago"
    assert parts["title"] == f"{local:%Y-%m-%d %H:%M:%S} {local:%Z} (Europe/Paris)"
    assert parts["datetime"] == local.isoformat()
    assert parts["after"] == ""


def test_the_title_reads_as_a_schedules_times_do(settings: Any) -> None:
    settings.TIME_ZONE = "UTC"
    assert shown(datetime.datetime(2026, 3, 10, 12, tzinfo=datetime.timezone.utc))["title"] == (
        "2026-03-10 12:00:00 UTC (UTC)"
    )


def test_a_zone_named_shows_the_time_in_that_zone_whatever_the_current_one(settings: Any) -> None:
    settings.TIME_ZONE = "America/New_York"
    parts = shown(datetime.datetime(2026, 7, 1, 1, tzinfo=datetime.timezone.utc), zone="Europe/Paris")
    assert parts["title"] == "2026-07-01 03:00:00 CEST (Europe/Paris)"
    assert parts["datetime"] == "2026-07-01T03:00:00+02:00"


def test_without_use_tz_a_naive_time_is_in_time_zone(settings: Any) -> None:
    settings.USE_TZ = False
    settings.TIME_ZONE = "America/Argentina/Buenos_Aires"
    value = timezone.now() + datetime.timedelta(hours=2, seconds=5)
    assert timezone.is_naive(value)
    parts = shown(value)
    assert parts["text"] == "in 2 h"
    assert parts["title"] == f"{value:%Y-%m-%d %H:%M:%S} -03 (America/Argentina/Buenos_Aires)"


def test_a_time_the_current_zone_would_carry_past_9999_stays_in_its_own(settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Paris"
    last = datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)
    assert shown(last)["title"] == "9999-12-31 23:59:59 UTC (UTC)"


def test_exact_writes_the_time_after_it_too(settings: Any) -> None:
    settings.TIME_ZONE = "UTC"
    parts = shown(datetime.datetime(2026, 3, 10, 12, tzinfo=datetime.timezone.utc), exact=True)
    assert parts["after"] == ' <span class="quiet">2026-03-10 12:00:00 UTC (UTC)</span>'


def test_no_time_is_a_dash() -> None:
    assert times.when(None) == "-"


def test_the_template_filter_is_the_same_helper(settings: Any) -> None:
    settings.TIME_ZONE = "UTC"
    value = datetime.datetime(2026, 3, 10, 12, tzinfo=datetime.timezone.utc)
    # A variable the context lacks (a group never seen, say) is "-" too.
    rendered = Template("{% load sqlqueue_admin %}{{ value|when }}|{{ missing|when }}").render(
        Context({"value": value})
    )
    assert rendered == f"{times.when(value)}|-"
