"""Concurrency limits under real ``runworkers`` processes: jobs sharing a key with limit 2
never run more than 2 at once across processes and threads, and a worker killed with
SIGKILL in the middle leaks no slot (once rescued, the rest still run 2 at a time)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import Workers, wait_until
from tests.testapp.tasks import per_tenant

pytestmark = pytest.mark.slow

JOBS = 40
SECONDS = 0.3


def intervals(log: Path) -> list[tuple[float, float]]:
    return [(float(start), float(end)) for start, end in (line.split() for line in log.read_text().splitlines())]


def most_at_once(runs: list[tuple[float, float]]) -> int:
    """The most intervals that overlap at any moment (an end before a start at a tie)."""
    events = sorted([(start, 1) for start, _ in runs] + [(end, -1) for _, end in runs])
    at_once = most = 0
    for _, step in events:
        at_once += step
        most = max(most, at_once)
    return most


def finished() -> int:
    return Job.objects.filter(status=JobStatus.SUCCESSFUL).count()


def test_a_key_runs_two_at_a_time_across_processes_and_a_killed_worker_leaks_no_slot(
    start_workers: Callable[..., Workers], tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    Job.objects.enqueue_many(Job.objects.build(per_tenant, ("t7", str(log), SECONDS)) for _ in range(JOBS))
    workers = start_workers("--processes", "4", "--threads", "4")
    wait_until(lambda: finished() >= JOBS // 2, timeout=60, why=workers.text)
    wait_until(lambda: Job.objects.filter(status=JobStatus.RUNNING).exists(), timeout=10, why=workers.text)
    workers.kill()
    killed_at = log.stat().st_mtime
    before = intervals(log)
    assert Job.objects.filter(status=JobStatus.RUNNING).count() <= 2

    again = start_workers("--processes", "4", "--threads", "4")
    wait_until(lambda: finished() == JOBS, timeout=90, why=again.text)
    runs = intervals(log)
    after = runs[len(before) :]
    assert most_at_once(runs) == 2
    # The dead worker's slots came back with the rescue: two at a time again, not fewer.
    assert most_at_once(after) == 2
    assert min(start for start, _ in after) >= killed_at
    assert len(runs) >= JOBS
    assert again.stop() == 0, again.text()
