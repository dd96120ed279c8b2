"""How every admin page of the app shows a time: on one line, relative to now ("3 min
ago", "in 2 h"), with the exact time and its zone on hover (the ``title``) — read at a
glance in a narrow column, exact when it matters.

With ``USE_TZ`` a time is shown in the current time zone; without it, a naive time is
taken to be in ``TIME_ZONE``, as Django takes it."""

from __future__ import annotations

import contextlib
import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib import admin
from django.db.models import Model
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from django_sqlqueue.rules.recurrence import wall_time

#: The units of a relative time, largest first, with their length in seconds.
UNITS = (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("min", 60), ("s", 1))


def when(value: datetime.datetime | None, *, exact: bool = False, zone: str | None = None) -> SafeString | str:
    """``value`` as a ``<time>`` element reading its distance from now, the exact time
    and zone in its title; with ``exact``, the exact time written after it as well (a
    detail page has the room). In the time zone named ``zone`` if given (a schedule's
    times read in the entry's own), else in the current one. "-" for no time."""
    if value is None:
        return "-"
    shown = local(value, zone)
    element = format_html(
        '<time class="sqlqueue-time" datetime="{}" title="{}">{}</time>',
        shown.isoformat(),
        exact_time(shown),
        relative(value, timezone.now()),
    )
    if exact:
        return format_html('{} <span class="quiet">{}</span>', element, exact_time(shown))
    return element


def relative(value: datetime.datetime, now: datetime.datetime) -> str:
    """How far ``value`` is from ``now``, rounded in the largest unit it reaches: "in 2 h",
    "3 min ago"; "now" within half a second."""
    seconds = abs((value - now).total_seconds())
    if seconds < 0.5:
        return "now"
    unit, length = next((unit, length) for unit, length in UNITS if seconds >= length or length == 1)
    amount = f"{round(seconds / length)} {unit}"
    return f"in {amount}" if value > now else f"{amount} ago"


def local(value: datetime.datetime, zone: str | None = None) -> datetime.datetime:
    """``value`` in the time zone named ``zone``, else in the current one (in its own when
    that would carry it past the year 9999); a naive one is taken to be in ``TIME_ZONE``."""
    if timezone.is_naive(value):
        value = timezone.make_aware(value, timezone.get_default_timezone())
        if zone is None:
            return value
    with contextlib.suppress(OverflowError):
        return value.astimezone(ZoneInfo(zone)) if zone else timezone.localtime(value)
    return value


def exact_time(value: datetime.datetime) -> str:
    """``value`` (aware) to the second in its own zone, with the zone's abbreviation and
    name, as every time of a schedule reads: "2026-03-10 13:00:00 CET (Europe/Paris)".
    A zone with no name (a fixed offset) is read as UTC."""
    return wall_time(value, getattr(value.tzinfo, "key", None) or "UTC")


def column(field: str, description: str, *, exact: bool = False, ordering: str | None = None) -> Any:
    """A ``ModelAdmin`` column or read-only field showing the time in ``field`` with
    ``when``: ``finished = times.column("finished_at", "finished")``. Sorted by ``field``
    unless ``ordering`` names another."""

    @admin.display(description=description, ordering=ordering or field)
    def shown(model_admin: admin.ModelAdmin[Any], row: Model) -> SafeString | str:
        return when(getattr(row, field), exact=exact)

    return shown
