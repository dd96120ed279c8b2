"""Recurring jobs with real ``runworkers`` processes: four supervisors on one database
check the same every-second schedule, from settings or defined and edited in the admin,
and each tick gives exactly one job."""

from __future__ import annotations

import datetime
import itertools
import json
from collections import Counter
from collections.abc import Callable

import pytest

from django_sqlqueue.db import recurrence
from django_sqlqueue.models import Job, Schedule, Worker
from tests.support.workers import Workers, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

StartWorkers = Callable[..., Workers]
SECOND = datetime.timedelta(seconds=1)
#: ``missed="all"``: a check that comes late (a busy machine) still enqueues every tick.
NOOP = "tests.testapp.tasks.noop"
SCHEDULE = json.dumps({"tick": {"task": NOOP, "every": 1, "missed": "all"}})
#: Ticks to see after all four supervisors run: 20 seconds of them.
TICKS = 20


def test_four_supervisors_enqueue_each_tick_exactly_once(start_workers: StartWorkers) -> None:
    supervisors = [start_workers("--processes", "1", SQLQUEUE_SCHEDULE=SCHEDULE) for _ in range(4)]
    logs = lambda: "\n".join(workers.text() for workers in supervisors)  # noqa: E731
    wait_until(lambda: Worker.objects.count() == 4, timeout=90, why=logs)
    first = Job.objects.count()
    wait_until(lambda: Job.objects.count() >= first + TICKS, timeout=90, why=logs)
    for workers in supervisors:
        assert workers.stop() == 0, workers.text()
    assert_each_tick_once()


def test_four_supervisors_enqueue_each_tick_once_while_the_admin_edits_the_schedule(
    start_workers: StartWorkers,
) -> None:
    """A schedule defined in the admin, edited five times while the supervisors tick it:
    an edit made during a tick gives that tick neither two jobs nor none, and the ticks
    after an edit enqueue what it says, with no restart."""
    recurrence.define(Schedule(key="tick", task=NOOP, every=1, missed="all", tz="UTC", kwargs={"v": 0}), "default")
    supervisors = [start_workers("--processes", "1") for _ in range(4)]
    logs = lambda: "\n".join(workers.text() for workers in supervisors)  # noqa: E731
    wait_until(lambda: Worker.objects.count() == 4, timeout=90, why=logs)
    for version in range(1, 6):
        row = Schedule.objects.get()
        row.kwargs = {"v": version}
        recurrence.define(row, "default")
        wait_until(lambda: Job.objects.filter(kwargs={"v": version}).count() >= 2, timeout=90, why=logs)  # noqa: B023
    wait_until(lambda: Job.objects.count() >= TICKS, timeout=90, why=logs)
    for workers in supervisors:
        assert workers.stop() == 0, workers.text()
    assert_each_tick_once()
    versions = [job["v"] for job in Job.objects.order_by("run_at").values_list("kwargs", flat=True)]
    assert versions == sorted(versions)  # each edit holds from its tick on


def assert_each_tick_once() -> None:
    """Every tick from the first job's to the last's has exactly one job."""
    per_tick = Counter(Job.objects.values_list("run_at", flat=True))
    assert [tick for tick, jobs in per_tick.items() if jobs > 1] == []
    ticks = sorted(per_tick)
    assert len(ticks) >= TICKS
    assert all(tick.microsecond == 0 for tick in ticks)
    # No gap between the first and the last: a gap would be a tick lost.
    assert [later - earlier for earlier, later in itertools.pairwise(ticks)] == [SECOND] * (len(ticks) - 1)
