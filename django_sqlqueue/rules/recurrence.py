"""Recurring jobs' arithmetic: the entries of ``SQLQUEUE_SCHEDULE``, the times each one
ticks, and which ticks are due at a given time.

Pure functions of their arguments: the caller passes "now" (the database's clock in
the supervisor, any time at all in a test), so nothing here reads a clock, a setting
or the database. ``cron`` entries need cronsim (``pip install "django-sqlqueue[cron]"``),
imported only when a cron entry is parsed or ticks; ``every`` entries do not."""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ImproperlyConfigured
from django.db import models

from django_sqlqueue.rules.limits import SCHEDULE_KEY_MAX_LENGTH

#: What an entry may say; ``task`` and one of ``cron`` or ``every`` are required.
KEYS = frozenset({"task", "cron", "every", "args", "kwargs", "queue", "priority", "tz", "enabled", "missed"})
#: What a check does with ticks it finds past due, per entry (``missed``).
MISSED = ("skip", "latest", "all")
DEFAULT_MISSED = "latest"
#: ``missed="skip"``: a tick this late still counts as on time (the supervisor checks
#: about every second, so only an outage, a stopped supervisor or a busy database
#: makes a tick later than this).
ON_TIME = datetime.timedelta(seconds=60)
#: ``missed="latest"``: the newest missed tick is enqueued when it is no older than this.
LATEST_WITHIN = datetime.timedelta(days=1)
#: ``missed="all"``: the most ticks one check enqueues for one entry. The rest follow
#: at the next checks (about one a second), oldest first, so a long outage catches up
#: at this many jobs a second rather than in one flood.
ALL_AT_ONCE = 100
#: The shortest ``every``: the supervisor checks about once a second.
MIN_EVERY = datetime.timedelta(seconds=1)
#: The longest ``every`` (the longest job delay too): its ticks, multiples of it since
#: the epoch, stay times a database can store for several periods to come.
MAX_EVERY = datetime.timedelta(days=1000 * 365)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class DefinedIn(models.TextChoices):
    """Where a recurring job is defined: in ``SQLQUEUE_SCHEDULE`` (the admin shows it
    read-only; a deploy changes it), or in the admin (added, edited and deleted there)."""

    SETTINGS = "settings", "settings"
    ADMIN = "admin", "admin"


@dataclass(frozen=True)
class Entry:
    """One validated entry of ``SQLQUEUE_SCHEDULE``: exactly one of ``cron`` and ``every``."""

    key: str
    task: str
    cron: str | None = None
    every: datetime.timedelta | None = None
    tz: str = "UTC"
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    queue: str | None = None
    priority: int | None = None
    enabled: bool = True
    missed: str = DEFAULT_MISSED

    @property
    def expression(self) -> str:
        """The cron expression, or ``every N s``: what the admin and the command show."""
        if self.cron is not None:
            return self.cron
        assert self.every is not None
        return f"every {self.every.total_seconds():g} s"

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    def ticks_after(self, after: datetime.datetime) -> Iterator[datetime.datetime]:
        """Its ticks strictly after the aware ``after``, in UTC, for ever.

        ``every`` ticks at the multiples of its period since the Unix epoch, so every
        supervisor computes the same ticks. ``cron`` ticks follow the entry's time zone
        as Debian's cron does across DST changes: a time in the skipped hour runs at the
        first valid time after it, a time in the repeated hour runs once."""
        if self.every is not None:
            period = _microseconds(self.every)
            tick = (_microseconds(after - _EPOCH) // period + 1) * period
            while True:
                yield _EPOCH + datetime.timedelta(microseconds=tick)
                tick += period
        assert self.cron is not None
        from cronsim import CronSim

        for local in CronSim(self.cron, after.astimezone(self.zone)):
            yield local.astimezone(datetime.timezone.utc)

    def next_ticks(self, after: datetime.datetime, count: int) -> list[datetime.datetime]:
        """Its next ``count`` ticks after ``after``."""
        ticks = self.ticks_after(after)
        return [next(ticks) for _ in range(count)]


@dataclass(frozen=True)
class Due:
    """What one check of an entry does: the ticks to enqueue (oldest first) and the
    tick its row moves on to, None when no tick is due."""

    enqueue: list[datetime.datetime]
    last_tick: datetime.datetime | None


def due(entry: Entry, last_tick: datetime.datetime, now: datetime.datetime) -> Due:
    """The ticks after ``last_tick`` up to ``now``, and which of them to enqueue by the
    entry's ``missed`` policy: ``"skip"`` enqueues the latest only if it is on time
    (:data:`ON_TIME`), ``"latest"`` the latest if no older than :data:`LATEST_WITHIN`,
    ``"all"`` every one, at most :data:`ALL_AT_ONCE` at a time."""
    passed: list[datetime.datetime] = []
    for tick in entry.ticks_after(last_tick):
        if tick > now:
            break
        passed.append(tick)
        # Past the bound the rest are left for the next check; for the other policies
        # only the latest matters, and a long outage must not make this loop long.
        if entry.missed == "all" and len(passed) == ALL_AT_ONCE:
            return Due(passed, tick)
        if len(passed) > ALL_AT_ONCE:
            passed = passed[-1:]
    if not passed:
        return Due([], None)
    latest = passed[-1]
    if entry.missed == "all":
        return Due(passed, latest)
    within = ON_TIME if entry.missed == "skip" else LATEST_WITHIN
    return Due([latest] if now - latest <= within else [], latest)


def wall_time(moment: datetime.datetime, tz: str) -> str:
    """An aware time as every view of a schedule shows it (the admin, ``sqlqueue_schedule``):
    the wall time in the schedule's zone ``tz``, its abbreviation and its name, such as
    ``2026-11-27 03:00:00 CET (Europe/Paris)``.

    In the schedule's zone, not the project's ``TIME_ZONE``, so that a cron entry's time
    reads as the wall time the entry names, on either side of a DST change; the
    abbreviation tells the two passes of a repeated hour apart, and the seconds the
    ticks of an ``every`` entry shorter than a minute."""
    if moment.utcoffset() is None:
        raise ValueError(f"wall_time needs an aware time, not {moment!r}")
    return f"{moment.astimezone(ZoneInfo(tz)):%Y-%m-%d %H:%M:%S %Z} ({tz})"


def cronsim_installed() -> bool:
    return find_spec("cronsim") is not None


def parse_schedule(value: Any, default_tz: str) -> dict[str, Entry]:
    """``SQLQUEUE_SCHEDULE`` validated; raises ``ImproperlyConfigured`` naming the entry.

    A cron expression is checked only when cronsim is installed (the system check
    says to install it otherwise)."""
    if not isinstance(value, Mapping):
        raise ImproperlyConfigured(f"SQLQUEUE_SCHEDULE must be a dict of names to entries, not {value!r}.")
    return {key: parse_entry(key, raw, default_tz) for key, raw in value.items()}


def parse_entry(key: Any, raw: Any, default_tz: str, source: str = "SQLQUEUE_SCHEDULE") -> Entry:
    """One entry, validated (see :func:`parse_schedule`); its errors name it as
    ``source[key]`` (a schedule defined in the admin is read back with ``"Schedule"``)."""
    if not isinstance(key, str) or not key or len(key) > SCHEDULE_KEY_MAX_LENGTH:
        raise ImproperlyConfigured(
            f"{source}: an entry's name must be a string of 1 to {SCHEDULE_KEY_MAX_LENGTH} characters, not {key!r}."
        )
    where = f"{source}[{key!r}]"
    if not isinstance(raw, Mapping):
        raise ImproperlyConfigured(f"{where} must be a dict, not {raw!r}.")
    if unknown := sorted(map(str, set(raw) - KEYS)):
        raise ImproperlyConfigured(f"{where} has unknown keys {unknown}; use {sorted(KEYS)}.")
    task = raw.get("task")
    if not isinstance(task, str) or not task:
        raise ImproperlyConfigured(f"{where} must name its task (a registered task name) in 'task'.")
    if ("cron" in raw) == ("every" in raw):
        raise ImproperlyConfigured(f"{where} must have exactly one of 'cron' and 'every'.")
    try:
        tz = time_zone(raw.get("tz", default_tz))
        cron = cron_expression(raw["cron"]) if "cron" in raw else None
        every = every_period(raw["every"]) if "every" in raw else None
    except ValueError as error:
        raise ImproperlyConfigured(f"{where}: {error}") from None
    missed = raw.get("missed", DEFAULT_MISSED)
    if missed not in MISSED:
        raise ImproperlyConfigured(f"{where}: missed must be one of {', '.join(map(repr, MISSED))}, not {missed!r}.")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ImproperlyConfigured(f"{where}: enabled must be True or False, not {enabled!r}.")
    args, kwargs = raw.get("args", []), raw.get("kwargs", {})
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs, Mapping):
        raise ImproperlyConfigured(f"{where}: args must be a list and kwargs a dict.")
    queue, priority = raw.get("queue"), raw.get("priority")
    if queue is not None and not isinstance(queue, str):
        raise ImproperlyConfigured(f"{where}: queue must be a queue name, not {queue!r}.")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise ImproperlyConfigured(f"{where}: priority must be an integer, not {priority!r}.")
    return Entry(
        key=key,
        task=task,
        cron=cron,
        every=every,
        tz=tz,
        args=list(args),
        kwargs=dict(kwargs),
        queue=queue,
        priority=priority,
        enabled=enabled,
        missed=missed,
    )


def time_zone(name: Any) -> str:
    """``name`` if it names a time zone; raises ``ValueError`` saying what is wrong."""
    try:
        if not isinstance(name, str):
            raise ValueError
        ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        raise ValueError(f"{name!r} is not a time zone name, such as 'Europe/Paris'.") from None
    return name


def cron_expression(expression: Any) -> str:
    """``expression`` if it is a five-field cron expression; raises ``ValueError`` saying
    what is wrong. Its fields are checked only when cronsim is installed."""
    if not isinstance(expression, str) or len(expression.split()) != 5:
        raise ValueError(f"cron must be a five-field expression such as '0 3 * * *', not {expression!r}.")
    if cronsim_installed():
        from cronsim import CronSim, CronSimError

        try:
            CronSim(expression, datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc))
        except CronSimError as error:
            raise ValueError(f"cron {expression!r} is not valid: {error}.") from None
    return expression


def every_period(value: Any) -> datetime.timedelta:
    """``value`` (seconds or a ``timedelta``) as a period from :data:`MIN_EVERY` to
    :data:`MAX_EVERY`; raises ``ValueError`` saying what is wrong."""
    # Compared before any conversion: a timedelta of 1e15 s would overflow first.
    if isinstance(value, datetime.timedelta):
        in_range = MIN_EVERY <= value <= MAX_EVERY
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        in_range = MIN_EVERY.total_seconds() <= value <= MAX_EVERY.total_seconds()
    else:
        raise ValueError(f"every must be seconds or a timedelta, not {value!r}.")
    if not in_range:
        raise ValueError(
            f"every must be from {MIN_EVERY.total_seconds():g} s to {MAX_EVERY.days} days "
            f"({MAX_EVERY.total_seconds():.0f} s), not {value!r}."
        )
    return value if isinstance(value, datetime.timedelta) else datetime.timedelta(seconds=value)


def _microseconds(delta: datetime.timedelta) -> int:
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
