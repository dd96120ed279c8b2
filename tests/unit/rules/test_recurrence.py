"""Recurring jobs' arithmetic (``recurrence.py``): entries, ticks across DST changes,
and the missed-tick policies, with "now" passed in (no clock, no sleep)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_sqlqueue.rules.recurrence import (
    ALL_AT_ONCE,
    LATEST_WITHIN,
    ON_TIME,
    Entry,
    due,
    parse_entry,
    parse_schedule,
    wall_time,
)

UTC = datetime.timezone.utc
SECOND = datetime.timedelta(seconds=1)
MINUTE = datetime.timedelta(minutes=1)


def at(*fields: int) -> datetime.datetime:
    return datetime.datetime(*fields).replace(tzinfo=UTC)  # type: ignore[arg-type]


def fired(entry: Entry, start: datetime.datetime, end: datetime.datetime, step: datetime.timedelta) -> list[str]:
    """The ticks enqueued by checks every ``step`` from ``start`` to ``end``, as a
    supervisor would make them, in UTC."""
    last, now, enqueued = start, start, []
    while now < end:
        now += step
        ticks = due(entry, last, now)
        last = ticks.last_tick or last
        enqueued += ticks.enqueue
    return [f"{tick:%Y-%m-%d %H:%M}" for tick in enqueued]


def test_every_ticks_at_multiples_of_its_period_since_the_epoch() -> None:
    entry = parse_entry("ping", {"task": "t", "every": 30}, "UTC")
    assert entry.next_ticks(at(2026, 1, 1, 12, 0, 10), 3) == [
        at(2026, 1, 1, 12, 0, 30),
        at(2026, 1, 1, 12, 1, 0),
        at(2026, 1, 1, 12, 1, 30),
    ]
    # Strictly after: a tick is never due twice.
    assert entry.next_ticks(at(2026, 1, 1, 12, 0, 30), 1) == [at(2026, 1, 1, 12, 1, 0)]


def test_every_takes_a_timedelta() -> None:
    entry = parse_entry("hourly", {"task": "t", "every": datetime.timedelta(hours=1)}, "UTC")
    assert entry.every == datetime.timedelta(hours=1)
    assert entry.expression == "every 3600 s"


def test_cron_in_the_skipped_hour_runs_once_at_the_first_valid_time() -> None:
    # Europe/Paris skips from 02:00 to 03:00 on 29 March 2026.
    entry = parse_entry("nightly", {"task": "t", "cron": "30 2 * * *", "tz": "Europe/Paris"}, "UTC")
    runs = fired(entry, at(2026, 3, 27, 12), at(2026, 3, 30, 12), MINUTE)
    # 02:30 CET on the 28th, 03:00 CEST on the 29th (the first valid time), 02:30 CEST on the 30th.
    assert runs == ["2026-03-28 01:30", "2026-03-29 01:00", "2026-03-30 00:30"]


def test_cron_in_the_repeated_hour_runs_once() -> None:
    # Europe/Paris goes through 02:00-03:00 twice on 25 October 2026.
    entry = parse_entry("nightly", {"task": "t", "cron": "30 2 * * *", "tz": "Europe/Paris"}, "UTC")
    runs = fired(entry, at(2026, 10, 24, 12), at(2026, 10, 26, 12), MINUTE)
    assert runs == ["2026-10-25 00:30", "2026-10-26 01:30"]


def test_cron_follows_its_time_zone_not_utc() -> None:
    entry = parse_entry("nightly", {"task": "t", "cron": "0 3 * * *", "tz": "Europe/Paris"}, "UTC")
    assert entry.next_ticks(at(2026, 1, 1), 1) == [at(2026, 1, 1, 2)]  # CET is UTC+1
    assert entry.next_ticks(at(2026, 7, 1), 1) == [at(2026, 7, 1, 1)]  # CEST is UTC+2


def test_ticks_are_shown_at_the_wall_time_the_cron_entry_names_across_dst_changes() -> None:
    entry = parse_entry("nightly", {"task": "t", "cron": "0 3 * * *", "tz": "Europe/Paris"}, "UTC")
    # Europe/Paris moves from CEST to CET on 25 October 2026 and back on 28 March 2027.
    autumn = [wall_time(tick, entry.tz) for tick in entry.next_ticks(at(2026, 10, 24), 2)]
    spring = [wall_time(tick, entry.tz) for tick in entry.next_ticks(at(2027, 3, 27), 2)]
    assert autumn == ["2026-10-24 03:00:00 CEST (Europe/Paris)", "2026-10-25 03:00:00 CET (Europe/Paris)"]
    assert spring == ["2027-03-27 03:00:00 CET (Europe/Paris)", "2027-03-28 03:00:00 CEST (Europe/Paris)"]


def test_the_two_passes_of_a_repeated_hour_are_told_apart() -> None:
    first, second = at(2026, 10, 25, 0, 30), at(2026, 10, 25, 1, 30)
    assert wall_time(first, "Europe/Paris") == "2026-10-25 02:30:00 CEST (Europe/Paris)"
    assert wall_time(second, "Europe/Paris") == "2026-10-25 02:30:00 CET (Europe/Paris)"


def test_a_naive_time_is_refused_rather_than_read_in_the_machines_zone() -> None:
    with pytest.raises(ValueError, match="aware"):
        wall_time(datetime.datetime(2026, 1, 1, 3), "Europe/Paris")


def entry_every_minute(missed: str) -> Entry:
    return parse_entry("minutely", {"task": "t", "every": 60, "missed": missed}, "UTC")


@pytest.mark.parametrize("missed", ["skip", "latest", "all"])
def test_on_time_ticks_fire_once_whatever_the_policy(missed: str) -> None:
    ticks = due(entry_every_minute(missed), at(2026, 1, 1, 12, 0), at(2026, 1, 1, 12, 1, 2))
    assert ticks.enqueue == [at(2026, 1, 1, 12, 1)]
    assert ticks.last_tick == at(2026, 1, 1, 12, 1)


def test_nothing_is_due_before_the_next_tick() -> None:
    ticks = due(entry_every_minute("all"), at(2026, 1, 1, 12, 0), at(2026, 1, 1, 12, 0, 59))
    assert ticks.enqueue == []
    assert ticks.last_tick is None


def test_latest_enqueues_only_the_newest_missed_tick() -> None:
    ticks = due(entry_every_minute("latest"), at(2026, 1, 1, 12, 0), at(2026, 1, 1, 13, 0, 30))
    assert ticks.enqueue == [at(2026, 1, 1, 13, 0)]
    assert ticks.last_tick == at(2026, 1, 1, 13, 0)


def test_latest_skips_a_tick_older_than_its_bound() -> None:
    entry = parse_entry("monthly", {"task": "t", "cron": "0 3 1 * *"}, "UTC")
    now = at(2026, 2, 1, 3) + LATEST_WITHIN + SECOND
    ticks = due(entry, at(2026, 1, 1, 12), now)
    assert ticks.enqueue == []
    assert ticks.last_tick == at(2026, 2, 1, 3)


def test_skip_enqueues_nothing_missed() -> None:
    hourly = parse_entry("hourly", {"task": "t", "every": 3600, "missed": "skip"}, "UTC")
    late = due(hourly, at(2026, 1, 1, 10, 0), at(2026, 1, 1, 13, 0) + ON_TIME + SECOND)
    assert late.enqueue == []
    assert late.last_tick == at(2026, 1, 1, 13, 0)
    # The latest tick, when it is still on time, is not a missed one.
    on_time = due(hourly, at(2026, 1, 1, 10, 0), at(2026, 1, 1, 13, 0) + ON_TIME)
    assert on_time.enqueue == [at(2026, 1, 1, 13, 0)]


def test_all_enqueues_every_missed_tick_at_most_a_bounded_number_per_check() -> None:
    entry = entry_every_minute("all")
    start, now = at(2026, 1, 1, 0, 0), at(2026, 1, 2, 0, 0)  # 1,440 ticks missed
    first = due(entry, start, now)
    assert first.enqueue == [start + (n + 1) * MINUTE for n in range(ALL_AT_ONCE)]
    assert first.last_tick == first.enqueue[-1]
    # The next check goes on from there: none lost, none twice.
    assert first.last_tick is not None
    second = due(entry, first.last_tick, now)
    assert second.enqueue[0] == first.last_tick + MINUTE
    assert len(fired(entry, start, now + SECOND, datetime.timedelta(days=2))) == ALL_AT_ONCE
    assert len(fired(entry, start, now + 20 * SECOND, SECOND)) == 1440


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"task": "t"}, "exactly one of 'cron' and 'every'"),
        ({"task": "t", "cron": "* * * * *", "every": 5}, "exactly one of 'cron' and 'every'"),
        ({"task": "t", "every": 5, "when": 1}, "unknown keys ['when']"),
        ({"cron": "* * * * *"}, "must name its task"),
        ({"task": "t", "cron": "61 * * * *"}, "is not valid"),
        ({"task": "t", "cron": "* * * *"}, "five-field expression"),
        ({"task": "t", "every": 0.5}, "every must be from 1 s to 365000 days (31536000000 s), not 0.5."),
        ({"task": "t", "every": "5"}, "seconds or a timedelta"),
        ({"task": "t", "every": 5, "tz": "Mars/Olympus"}, "'Mars/Olympus' is not a time zone"),
        ({"task": "t", "every": 5, "missed": "some"}, "missed must be one of"),
        ({"task": "t", "every": 5, "enabled": "yes"}, "enabled must be True or False"),
        ({"task": "t", "every": 5, "args": "x"}, "args must be a list"),
        ({"task": "t", "every": 5, "priority": "high"}, "priority must be an integer"),
    ],
)
def test_bad_entries_are_refused_naming_the_entry(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="SQLQUEUE_SCHEDULE\\['report'\\]") as error:
        parse_schedule({"report": raw}, "UTC")
    assert message in str(error.value)


@pytest.mark.parametrize(
    "every",
    [
        1e10,
        datetime.timedelta(days=365_000),
        31_536_000_000,
    ],
)
def test_every_up_to_its_limit_is_kept_as_given_and_ticks(every: Any) -> None:
    """Issue 36: every above about 1e9 s was silently cut to 1e9 s."""
    entry = parse_entry("rare", {"task": "t", "every": every}, "UTC")
    seconds = every.total_seconds() if isinstance(every, datetime.timedelta) else every
    assert entry.every == datetime.timedelta(seconds=seconds)
    first, second = entry.next_ticks(at(2026, 1, 1, 0, 0), 2)
    assert second - first == entry.every


@pytest.mark.parametrize(
    "every",
    [
        datetime.timedelta(days=3_000_000),
        datetime.timedelta(days=365_000, microseconds=1),
        31_536_000_001,
        1e300,
        datetime.timedelta(seconds=-5),
        -5,
    ],
)
def test_every_past_its_limits_is_refused_saying_the_limits(every: Any) -> None:
    """Issue 36: timedelta(days=3_000_000) was refused as "at least 1 s"."""
    with pytest.raises(ImproperlyConfigured) as error:
        parse_entry("rare", {"task": "t", "every": every}, "UTC")
    assert str(error.value) == (
        f"SQLQUEUE_SCHEDULE['rare']: every must be from 1 s to 365000 days (31536000000 s), not {every!r}."
    )


def test_tz_defaults_to_the_one_given() -> None:
    assert parse_entry("x", {"task": "t", "every": 5}, "Europe/Paris").tz == "Europe/Paris"
