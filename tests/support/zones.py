"""Time zones for the clock tests: the project's (``USE_TZ``, ``TIME_ZONE``) and the
database server's, each combination a case."""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connections
from django.test import override_settings
from django.utils import timezone

#: ``TIME_ZONE``s: UTC, one ahead of it without daylight saving time, one behind with it.
PROJECT_ZONES = ["UTC", "Asia/Tokyo", "America/New_York"]

#: The server's time zone as each database sets it: MariaDB without time zone tables
#: takes offsets only. SQLite has no server: its ``'now'`` is UTC.
SERVER_ZONES: dict[str, list[str | None]] = {
    "mysql": ["+00:00", "-07:00", "+05:30"],
    "postgresql": ["UTC", "America/Los_Angeles", "Asia/Kolkata"],
    "sqlite": [None],
}

#: ``(USE_TZ, TIME_ZONE, the server's zone)`` for the tests' database.
COMBINATIONS = list(itertools.product([True, False], PROJECT_ZONES, SERVER_ZONES[connections["default"].vendor]))


@contextmanager
def zones(use_tz: bool, time_zone: str, server: str | None, alias: str = "default") -> Iterator[None]:
    """The project's settings, and its connection as it is when the server's time zone
    is ``server``: MySQL's session ``time_zone`` (which Django leaves as the server set
    it); PostgreSQL's ``TimeZone`` as the server gives it, then as Django sets it on a
    new connection."""
    connection = connections[alias]
    with override_settings(USE_TZ=use_tz, TIME_ZONE=time_zone):
        if connection.vendor == "mysql":
            with connection.cursor() as cursor:
                cursor.execute("SET time_zone = %s", [server])
            try:
                yield
            finally:
                with connection.cursor() as cursor:
                    cursor.execute("SET time_zone = @@global.time_zone")
            return
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(connection.ops.set_time_zone_sql(), [server])
            connection.ensure_timezone()
        yield


def stored(moment: datetime.datetime) -> datetime.datetime:
    """An aware time as Django stores it under the current settings: itself with
    ``USE_TZ``, the naive local time of ``TIME_ZONE`` without."""
    return moment if settings.USE_TZ else timezone.make_naive(moment, timezone.get_default_timezone())
