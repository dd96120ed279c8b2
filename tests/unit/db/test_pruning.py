"""Pruning finished jobs past their retention (``db/pruning.py``): what goes, what stays."""

from __future__ import annotations

import datetime
import types
from typing import Any

import pytest

from django_sqlqueue.db import pruning, rollup, transient
from django_sqlqueue.models import Job, JobStatus
from tests.support.finished import finished_job as job

pytestmark = pytest.mark.django_db

HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)
RETENTION = {JobStatus.SUCCESSFUL: DAY, JobStatus.CANCELLED: 7 * DAY, JobStatus.FAILED: None}


def left() -> set[int]:
    return set(Job.objects.values_list("pk", flat=True))


def test_prune_deletes_exactly_the_jobs_past_their_status_retention() -> None:
    old_success = job(JobStatus.SUCCESSFUL, DAY + HOUR)
    old_cancelled = job(JobStatus.CANCELLED, 8 * DAY)
    kept = {
        job(JobStatus.SUCCESSFUL, DAY - HOUR),
        job(JobStatus.CANCELLED, 6 * DAY),
        # FAILED is kept for ever.
        job(JobStatus.FAILED, 3650 * DAY),
        # Never READY or RUNNING, whatever their finished_at says (an admin retry clears it).
        job(JobStatus.READY, 3650 * DAY),
        job(JobStatus.RUNNING, 3650 * DAY),
        job(JobStatus.READY, None),
        job(JobStatus.SUCCESSFUL, None),
    }

    pruned = pruning.prune(Job.objects.on_queue_db(), RETENTION)

    assert left() == kept
    assert not {old_success, old_cancelled} & left()
    assert pruned.deleted == {JobStatus.SUCCESSFUL: 1, JobStatus.CANCELLED: 1}
    assert pruned.complete


def test_a_job_retried_between_the_read_and_the_delete_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    retried, deleted = job(JobStatus.FAILED, 40 * DAY), job(JobStatus.FAILED, 41 * DAY)
    real = transient.retry_transient

    def retry_first(*args: Any, **kwargs: Any) -> Any:
        # The admin retries one of the chunk's jobs after its ids were read, before the DELETE.
        Job.objects.filter(pk=retried).update(status=JobStatus.READY, finished_at=None)
        return real(*args, **kwargs)

    monkeypatch.setattr(pruning, "retry_transient", retry_first)
    pruned = pruning.prune(Job.objects.on_queue_db(), {JobStatus.FAILED: 30 * DAY})

    assert pruned.deleted == {JobStatus.FAILED: 1}
    assert left() == {retried}
    assert Job.objects.get(pk=retried).status == JobStatus.READY
    assert deleted not in left()


def test_count_is_what_prune_would_delete() -> None:
    for _ in range(3):
        job(JobStatus.SUCCESSFUL, 2 * DAY)
    job(JobStatus.SUCCESSFUL, HOUR)
    job(JobStatus.FAILED, 3650 * DAY)
    before = left()

    assert pruning.count(Job.objects.on_queue_db(), RETENTION) == {JobStatus.SUCCESSFUL: 3, JobStatus.CANCELLED: 0}
    assert left() == before


def test_zero_retention_deletes_every_job_of_that_status_and_no_other() -> None:
    job(JobStatus.FAILED, 2 * HOUR)
    job(JobStatus.CANCELLED, datetime.timedelta(seconds=1))
    kept = {job(JobStatus.SUCCESSFUL, 2 * HOUR), job(JobStatus.READY, None)}

    pruning.prune(Job.objects.on_queue_db(), {JobStatus.FAILED: datetime.timedelta(0), JobStatus.CANCELLED: None})
    pruning.prune(Job.objects.on_queue_db(), {JobStatus.CANCELLED: datetime.timedelta(0)})

    assert left() == kept


def test_a_charted_job_stays_until_its_hour_is_counted() -> None:
    # The admin's 7-day chart counts an hour once it has closed: until then its
    # successes and failures stay, whatever the retention; cancellations do not wait.
    kept = {job(JobStatus.FAILED, datetime.timedelta(seconds=1)), job(JobStatus.SUCCESSFUL, None)}
    job(JobStatus.CANCELLED, datetime.timedelta(seconds=1))
    zero = datetime.timedelta(0)

    retention = dict.fromkeys((JobStatus.SUCCESSFUL, JobStatus.CANCELLED, JobStatus.FAILED), zero)
    pruned = pruning.prune(Job.objects.on_queue_db(), retention)

    assert left() == kept
    assert pruned.deleted == {JobStatus.SUCCESSFUL: 0, JobStatus.CANCELLED: 1, JobStatus.FAILED: 0}


def test_prune_goes_chunk_by_chunk_oldest_first() -> None:
    ages = [10, 9, 8, 7, 6]
    jobs = [job(JobStatus.SUCCESSFUL, age * DAY) for age in ages]
    chunks: list[tuple[JobStatus, int]] = []

    pruned = pruning.prune(
        Job.objects.on_queue_db(),
        {JobStatus.SUCCESSFUL: DAY},
        batch_size=2,
        on_chunk=lambda status, deleted: chunks.append((status, deleted)),
    )

    assert chunks == [(JobStatus.SUCCESSFUL, 2), (JobStatus.SUCCESSFUL, 2), (JobStatus.SUCCESSFUL, 1)]
    assert pruned.deleted == {JobStatus.SUCCESSFUL: 5}
    assert not set(jobs) & left()


class ChunkClock:
    """``pruning``'s view of ``time``: each chunk seems to take ``busy`` seconds, and the
    rests it asks for are recorded, not slept."""

    def __init__(self, busy: float) -> None:
        self.now, self.busy = 0.0, busy
        self.rests: list[float] = []

    def monotonic(self) -> float:
        self.now += self.busy  # read as a chunk starts and as it ends: busy seconds apart
        return self.now

    def sleep(self, seconds: float) -> None:
        self.rests.append(seconds)


@pytest.mark.parametrize(("duty_cycle", "rest"), [(0.25, 0.3), (0.5, 0.1), (1.0, None)])
def test_prune_rests_between_chunks_for_its_duty_cycle(
    monkeypatch: pytest.MonkeyPatch, duty_cycle: float, rest: float | None
) -> None:
    jobs = [job(JobStatus.SUCCESSFUL, age * DAY) for age in (10, 9, 8, 7, 6)]
    clock = ChunkClock(busy=0.1)
    monkeypatch.setattr(pruning, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))

    pruned = pruning.prune(Job.objects.on_queue_db(), {JobStatus.SUCCESSFUL: DAY}, batch_size=2, duty_cycle=duty_cycle)

    assert pruned.deleted == {JobStatus.SUCCESSFUL: 5}
    assert not set(jobs) & left()
    # Three chunks (2, 2, 1): a rest after each but the last; none flat out.
    assert clock.rests == pytest.approx([] if rest is None else [rest, rest])


def test_max_chunks_stops_early_and_says_so() -> None:
    jobs = [job(JobStatus.SUCCESSFUL, age * DAY) for age in (10, 9, 8, 7, 6)]
    # With max_chunks it counts one batch of the chart's hours a time: count them all first.
    rollup.catch_up(Job.objects.on_queue_db().db)

    first = pruning.prune(Job.objects.on_queue_db(), {JobStatus.SUCCESSFUL: DAY}, batch_size=2, max_chunks=2)

    assert (first.deleted, first.complete) == ({JobStatus.SUCCESSFUL: 4}, False)
    assert left() == {jobs[-1]}
    second = pruning.prune(Job.objects.on_queue_db(), {JobStatus.SUCCESSFUL: DAY}, batch_size=2, max_chunks=2)
    assert (second.deleted, second.complete) == ({JobStatus.SUCCESSFUL: 1}, True)
    assert left() == set()


def test_max_chunks_counts_one_batch_of_hours_a_time_and_says_more_are_left() -> None:
    retention = {JobStatus.SUCCESSFUL: DAY}
    jobs = Job.objects.on_queue_db()

    assert not pruning.prune(jobs, retention, max_chunks=2).complete
    # The window's closed hours: all but the current one, and the last one while it closes.
    closed = (rollup.WINDOW - 1, rollup.WINDOW - 2)
    assert len(rollup.hours(jobs.db).missing) in {hours - rollup.BATCH_HOURS for hours in closed}
    assert pruning.prune(jobs, retention).complete
    assert rollup.hours(jobs.db).missing == []
