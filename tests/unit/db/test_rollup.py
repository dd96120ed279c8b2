"""Counting closed hours for the 7-day chart (``db/rollup.py``): each hour once, whole,
from its own jobs, and before pruning deletes them."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import DatabaseError, connection, connections

from django_sqlqueue.admin.throughput import LAST_WEEK, throughput
from django_sqlqueue.db import pruning, rollup
from django_sqlqueue.db.clock import database_now
from django_sqlqueue.models import FinishedHour, Job, JobStatus
from tests.support.admin_helpers import make_job

pytestmark = pytest.mark.django_db

HOUR = rollup.HOUR
MICROSECOND = datetime.timedelta(microseconds=1)


def counted() -> dict[tuple[datetime.datetime, str], tuple[int, int]]:
    return {(row.hour, row.queue): (row.succeeded, row.failed) for row in FinishedHour.objects.all()}


def hour(ago: int) -> datetime.datetime:
    """The start of the hour ``ago`` hours before the current one, by the database's clock."""
    return rollup.floor_hour(database_now("default")) - ago * HOUR


def week() -> dict[str, tuple[list[int], list[int]]]:
    return {
        queue: (chart.succeeded, chart.failed)
        for queue, chart in throughput(Job.objects.get_queryset(), LAST_WEEK).items()
    }


def test_each_job_counts_in_the_hour_it_finished_in_even_at_the_edges() -> None:
    three = hour(3)
    for finished_at in (three - MICROSECOND, three, three + HOUR - MICROSECOND, three + HOUR):
        make_job(JobStatus.SUCCESSFUL, finished_at=finished_at)
    make_job(JobStatus.FAILED, queue="mail", finished_at=three + 30 * rollup.CLOSE_AFTER / 5)
    make_job(JobStatus.CANCELLED, finished_at=three)  # not charted
    make_job(JobStatus.SUCCESSFUL, finished_at=hour(0))  # the current hour has not closed

    caught_up = rollup.catch_up("default")
    # Only an hour that closed while it counted (the clock passed xx:05) waits for the next call.
    assert caught_up.missing in ([], [caught_up.closed - HOUR])

    rows = counted()
    assert {key: value for key, value in rows.items() if value != (0, 0)} == {
        (hour(4), "default"): (1, 0),
        (hour(4), ""): (1, 0),
        (three, "default"): (2, 0),
        (three, "mail"): (0, 1),
        (three, ""): (2, 1),
        (hour(2), "default"): (1, 0),
        (hour(2), ""): (1, 0),
    }
    # Every closed hour of the window has its totals row, jobs or not; the current none.
    assert (hour(5), "") in rows
    assert (hour(0), "") not in rows
    closed = rollup.hour_range(caught_up.first, caught_up.closed)
    assert FinishedHour.objects.filter(queue="").count() == len(closed) - len(caught_up.missing)
    assert len(closed) in (rollup.WINDOW - 2, rollup.WINDOW - 1)


def test_an_hour_is_counted_once_however_often_it_is_caught_up() -> None:
    make_job(JobStatus.SUCCESSFUL, finished_at=hour(2))
    rollup.catch_up("default")
    make_job(JobStatus.SUCCESSFUL, finished_at=hour(2))  # too late: the hour is counted

    rollup.catch_up("default")

    assert counted()[hour(2), "default"] == (1, 0)


def catch_up_and_close() -> None:
    try:
        rollup.catch_up("default")
    finally:
        connections.close_all()  # this thread's own


@pytest.mark.django_db(transaction=True)
def test_two_writers_never_count_an_hour_twice() -> None:
    for ago in (2, 2, 30):
        make_job(JobStatus.SUCCESSFUL, finished_at=hour(ago))
    make_job(JobStatus.FAILED, finished_at=hour(30))
    other_writer = threading.Thread(target=catch_up_and_close)

    def count_with_another_writer_in_between(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        # Just before this writer reads the jobs of its hours, another one counts them all.
        if not other_writer.ident and "GROUP BY" in sql:
            other_writer.start()
            other_writer.join(timeout=60)
        return execute(sql, *args)

    with connection.execute_wrapper(count_with_another_writer_in_between):
        rollup.catch_up("default")

    assert other_writer.ident
    assert not other_writer.is_alive()
    rows = counted()
    assert (rows[hour(2), "default"], rows[hour(30), "default"], rows[hour(30), ""]) == ((2, 0), (1, 1), (1, 1))
    assert FinishedHour.objects.filter(queue="").count() == len(set(FinishedHour.objects.values_list("hour")))


def test_the_chart_counts_jobs_before_any_hour_is_counted_and_after() -> None:
    for ago in (0, 0, 1, 2, 100):
        make_job(JobStatus.SUCCESSFUL, queue="mail", finished_at=hour(ago) + MICROSECOND)
    make_job(JobStatus.FAILED, queue="mail", finished_at=hour(100) + HOUR - MICROSECOND)
    make_job(JobStatus.SUCCESSFUL, queue="mail", finished_at=hour(rollup.WINDOW) + HOUR - MICROSECOND)  # too old
    expected_succeeded = [0] * rollup.WINDOW
    for ago in (0, 0, 1, 2, 100):
        expected_succeeded[-1 - ago] += 1
    expected_failed = [0] * rollup.WINDOW
    expected_failed[-101] = 1
    assert not FinishedHour.objects.exists()

    first = week()  # no leader ran: the page counts the closed hours itself

    assert first == {"mail": (expected_succeeded, expected_failed)}
    assert FinishedHour.objects.filter(hour=hour(100), queue="mail").get().failed == 1
    assert week() == first  # now read from the counted hours


def refuse_counting(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
    """A database user that may read but not write (a read-only role, say)."""
    if sql.lstrip().upper().startswith("INSERT") and "finishedhour" in sql.lower():
        raise DatabaseError("permission denied for table django_sqlqueue_finishedhour")
    return execute(sql, *args)


def test_the_chart_is_right_when_it_may_not_count_hours(caplog: pytest.LogCaptureFixture) -> None:
    for ago in (0, 3, 3):
        make_job(JobStatus.SUCCESSFUL, queue="mail", finished_at=hour(ago) + MICROSECOND)
    expected = [0] * rollup.WINDOW
    expected[-1] += 1
    expected[-4] += 2
    with connection.execute_wrapper(refuse_counting):
        assert week() == {"mail": (expected, [0] * rollup.WINDOW)}
    assert not FinishedHour.objects.exists()
    assert "The 7-day chart could not count its closed hours: permission denied" in caplog.text


def test_pruning_counts_first_and_the_chart_keeps_what_it_deleted() -> None:
    for ago in (30, 30, 50):
        make_job(JobStatus.SUCCESSFUL, finished_at=hour(ago))
    make_job(JobStatus.FAILED, finished_at=hour(50))
    one_day = datetime.timedelta(days=1)

    pruned = pruning.prune(Job.objects.get_queryset(), {JobStatus.SUCCESSFUL: one_day, JobStatus.FAILED: one_day})

    assert pruned.deleted == {JobStatus.SUCCESSFUL: 3, JobStatus.FAILED: 1}
    assert not Job.objects.exists()
    succeeded, failed = week()["default"]
    assert (succeeded[-31], succeeded[-51], failed[-51], sum(succeeded), sum(failed)) == (2, 1, 1, 3, 1)


def test_a_counted_hour_is_fixed_when_its_jobs_change_later() -> None:
    failed = make_job(JobStatus.FAILED, finished_at=hour(3))
    rollup.catch_up("default")
    Job.objects.filter(pk=failed.pk).update(status=JobStatus.READY, finished_at=None)  # retried

    assert week()["default"][1][-4] == 1


def test_counted_hours_past_keep_are_deleted() -> None:
    now = database_now("default")
    for age in (rollup.KEEP + HOUR, rollup.KEEP - HOUR):
        FinishedHour.objects.create(hour=rollup.floor_hour(now - age), queue="", succeeded=1, failed=0)

    assert rollup.forget("default") == 1
    assert FinishedHour.objects.get().hour == rollup.floor_hour(now - rollup.KEEP + HOUR)
