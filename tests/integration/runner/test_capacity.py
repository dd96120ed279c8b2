"""What ``runworkers`` says its processes cost in connections is what they open, on a
server that counts them (``runner/capacity.py``)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from django.db import connection

from django_sqlqueue.models import Job
from tests.support.workers import Workers
from tests.testapp.models import Receipt
from tests.testapp.tasks import sleep_once_started

pytestmark = pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite has no server to count connections")


def open_connections() -> int:
    """Connections to the test database, this one among them."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        else:
            cursor.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()")
        (count,) = cursor.fetchone()
    return int(count)


def test_the_connections_the_banner_says_are_those_the_processes_open(start_workers: Callable[..., Workers]) -> None:
    Job.objects.enqueue_many(Job.objects.build(sleep_once_started, (f"t{n}", 4.0)) for n in range(4))
    before = open_connections()
    workers = start_workers("--processes", "2", "--threads", "2")
    deadline = time.monotonic() + 30
    while Receipt.objects.count() < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # two heartbeats (FAST_CLOCKS): each process's heartbeat has connected
    during = open_connections() - before
    assert workers.stop() == 0, workers.text()
    said = re.search(r", up to (\d+) connections\n", workers.text())
    assert said is not None, workers.text()
    # 2 x (claims, heartbeat, 2 threads, and LISTEN on PostgreSQL) + the supervisor's.
    assert int(said[1]) == during == (11 if connection.vendor == "postgresql" else 9), workers.text()
