"""A time zone's UTC offset as SQL, for the databases that store wall-clock times
(MySQL/MariaDB, SQLite): their clock (``Engine.clock``) is the database's UTC time
moved by the offset of the connection's zone, with no time zone tables on the server."""

from __future__ import annotations

import datetime
import functools
from zoneinfo import ZoneInfo

#: How far ahead :func:`local_clock` follows a zone's changes of offset: further than
#: a connection lives (the statements made with it are kept while it does).
_YEARS_AHEAD = 10


def local_clock(zone: str, utc: str, instant: str, offset: str) -> str:
    """SQL for ``zone``'s UTC offset now (``instant`` and ``offset`` format a change's
    UTC time and an offset in seconds), by the database's UTC clock ``utc``; "" for UTC.

    A zone without changes from last year to :data:`_YEARS_AHEAD` years on is one
    constant; otherwise a ``CASE`` of its changes, so that a connection's statements
    stay true across daylight saving time."""
    return _local_clock(zone, utc, instant, offset, datetime.datetime.now(datetime.timezone.utc).year)


@functools.lru_cache(maxsize=32)
def _local_clock(zone: str, utc: str, instant: str, offset: str, year: int) -> str:
    first, changes = _offsets(zone, year)
    if not changes:
        return offset % first if first else ""
    whens = " ".join(f"WHEN {utc} < {instant % at} THEN {offset % before}" for at, before, _ in changes)
    return f"CASE {whens} ELSE {offset % changes[-1][2]} END"


def _offsets(zone: str, year: int) -> tuple[int, list[tuple[str, int, int]]]:
    """``zone``'s UTC offset in seconds at the start of ``year - 1``, and its changes
    until :data:`_YEARS_AHEAD` years after ``year``: (UTC time, offset before, after)."""
    info = ZoneInfo(zone)
    day = datetime.timedelta(days=1)

    def offset(moment: datetime.datetime) -> int:
        return int(moment.astimezone(info).utcoffset().total_seconds())  # type: ignore[union-attr]

    moment = datetime.datetime(year - 1, 1, 1, tzinfo=datetime.timezone.utc)
    end = moment.replace(year=year + _YEARS_AHEAD)
    first = before = offset(moment)
    changes = []
    while moment < end:
        if (after := offset(moment + day)) != before:
            # The change is within this day: to the second, by halving.
            low, high = moment, moment + day
            while high - low > datetime.timedelta(seconds=1):
                middle = low + (high - low) / 2
                low, high = (low, middle) if offset(middle) == after else (middle, high)
            changes.append((f"{high:%Y-%m-%d %H:%M:%S}", before, after))
            before = after
        moment += day
    return first, changes
