"""Every engine's clock: SQL without parameters that reads the database's now as Django
reads back the datetimes it stored, whatever the zones (``tests/unit/db/test_clock.py``
tries every combination through the queue's statements)."""

from __future__ import annotations

import datetime

import pytest
from django.db import connections
from django.utils import timezone

from django_sqlqueue.db.clock import database_now
from django_sqlqueue.db.engines import engine
from tests.support.zones import COMBINATIONS, zones

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("use_tz", "time_zone", "server"), COMBINATIONS)
def test_the_clock_reads_the_projects_now(use_tz: bool, time_zone: str, server: str | None) -> None:
    with zones(use_tz, time_zone, server):
        default = connections["default"]
        with default.cursor() as cursor:
            cursor.execute(f"SELECT {engine(default).clock()}", [])
            assert cursor.fetchone() is not None
        assert abs(database_now("default") - timezone.now()) < datetime.timedelta(seconds=5)
