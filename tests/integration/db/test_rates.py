"""Rate limits under real ``runworkers`` processes: a 20/s limit holds across
processes and threads, with no burst larger than the documented one."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import Workers, wait_until
from tests.testapp.tasks import paced

pytestmark = pytest.mark.slow

RATE = 20
BURST = 20  # the default: one second of the rate
#: Enough for the burst and ten seconds at the rate.
JOBS = BURST + 10 * RATE


def most_in_window(starts: list[datetime.datetime], seconds: float) -> int:
    window = datetime.timedelta(seconds=seconds)
    return max(sum(first <= other < first + window for other in starts) for first in starts)


def test_a_rate_limit_holds_across_processes_with_no_larger_burst(start_workers: Callable[..., Workers]) -> None:
    Job.objects.enqueue_many(Job.objects.build(paced) for _ in range(JOBS))
    workers = start_workers("--processes", "2", "--threads", "4", SQLQUEUE_RATE_LIMITS=f'{{"test-rate": "{RATE}/s"}}')
    done = Job.objects.filter(status=JobStatus.SUCCESSFUL)
    wait_until(lambda: done.count() == JOBS, timeout=60, why=workers.text)
    starts = sorted(start for start in done.values_list("started_at", flat=True) if start is not None)
    assert len(starts) == JOBS
    span = (starts[-1] - starts[0]).total_seconds()
    # Never faster than the rate after the burst: in any window of t seconds, at most
    # BURST + RATE * t jobs started (one more for a token that was whole at a window's edge).
    for seconds in (0.5, 1, 2, 5, 10):
        assert most_in_window(starts, seconds) <= BURST + RATE * seconds + 1, seconds
    assert span >= (JOBS - BURST - 1) / RATE
    # ... and not much slower: idle workers take the tokens as they come.
    assert span <= 3 * (JOBS - BURST) / RATE
    assert workers.stop() == 0, workers.text()


def test_a_burst_run_waits_for_the_jobs_its_limit_holds_back(start_workers: Callable[..., Workers]) -> None:
    """``--burst`` drains what is due: jobs a rate limit holds back are claimed as the
    tokens come, not left ``READY`` when a claim first finds none it may take."""
    jobs = 25  # past the burst of 5 tokens, a second at the rate
    Job.objects.enqueue_many(Job.objects.build(paced) for _ in range(jobs))
    workers = start_workers("--burst", SQLQUEUE_RATE_LIMITS='{"test-rate": "20/s burst 5"}')
    assert workers.wait(timeout=60) == 0, workers.text()
    assert Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == jobs
