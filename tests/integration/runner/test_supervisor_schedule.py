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
from django.utils import timezone

from django_sqlqueue.db import recurrence
from django_sqlqueue.db.building import HOOK_ERRORS
from django_sqlqueue.models import Job, JobStatus, Schedule, Worker
from tests.support.workers import Workers, wait_until
from tests.testapp.tasks import add

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

StartWorkers = Callable[..., Workers]
SECOND = datetime.timedelta(seconds=1)
#: ``missed="all"``: a check that comes late (a busy machine) still enqueues every tick.
NOOP = "tests.testapp.tasks.noop"
SCHEDULE = json.dumps({"tick": {"task": NOOP, "every": 1, "missed": "all"}})
#: An enqueue hook written for web requests, which raises on the runner's own enqueues.
HOOK = "tests.support.middleware.request_scoped"
#: Ticks to see after all four supervisors run: 20 seconds of them.
TICKS = 20


def test_an_enqueue_hook_raising_on_every_tick_stops_neither_the_ticks_nor_the_rescue(
    start_workers: StartWorkers,
) -> None:
    """A hook written for web requests raises on each tick's job: the ticks still
    enqueue their jobs, which run, and the supervisor goes on with its other
    maintenance: it rescues a job whose worker is gone, after the hook raised."""
    hooks = json.dumps([HOOK])
    workers = start_workers("--processes", "1", SQLQUEUE_SCHEDULE=SCHEDULE, SQLQUEUE_ENQUEUE_HOOKS=hooks)
    ticks = Job.objects.filter(task=NOOP, status=JobStatus.SUCCESSFUL)
    wait_until(lambda: ticks.count() >= 3, timeout=90, why=workers.text)
    assert f"SQLQUEUE_ENQUEUE_HOOKS: {HOOK}, given a {NOOP} job the runner enqueues, raised" in workers.text()
    held = Job.objects.enqueue(add, (1, 2))
    long_ago = timezone.now() - datetime.timedelta(hours=1)
    Job.objects.filter(pk=held.pk).update(
        status=JobStatus.RUNNING, worker="gone-worker", attempts=1, started_at=long_ago
    )
    wait_until(
        lambda: Job.objects.filter(pk=held.pk, status=JobStatus.SUCCESSFUL).exists(), timeout=90, why=workers.text
    )
    # None of the hook's changes, only the record of its error.
    metas = Job.objects.filter(task=NOOP).values_list("meta", flat=True)
    assert {tuple(meta or {}) for meta in metas} == {(HOOK_ERRORS,)}
    assert workers.stop() == 0, workers.text()
    assert "Traceback" in workers.text()


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
