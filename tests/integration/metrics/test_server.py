"""``runworkers --metrics-port``: a scrape of the supervisor while real worker processes
drain the queue."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Callable

import pytest

from django_sqlqueue.models import Job
from tests.support.ports import free_port
from tests.support.workers import Workers, wait_until
from tests.testapp.tasks import fail, sleep

pytestmark = pytest.mark.slow

StartWorkers = Callable[..., Workers]

SUCCEEDED = re.compile(
    r'^sqlqueue_jobs_finished_total\{outcome="succeeded",queue="default",task="tests\.testapp\.tasks\.sleep"\} (\S+)$',
    re.MULTILINE,
)


def scrape(port: int) -> str:
    """The metrics page, or "" while nothing answers yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
            return str(response.read().decode())
    except OSError:
        return ""


def succeeded(page: str) -> float:
    match = SUCCEEDED.search(page)
    return float(match.group(1)) if match else 0.0


def test_the_counters_move_between_two_scrapes_during_a_drain(start_workers: StartWorkers) -> None:
    Job.objects.enqueue_many(Job.objects.build(sleep, (0.05,)) for _ in range(150))
    Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    port = free_port()
    workers = start_workers("--processes", "2", "--metrics-port", str(port))
    why = workers.text

    first = wait_until(lambda: succeeded(page := scrape(port)) > 0 and page, timeout=60, why=why)
    second = wait_until(lambda: succeeded(page := scrape(port)) > succeeded(first) and page, timeout=60, why=why)
    assert 0 < succeeded(first) < succeeded(second)

    # The counters move as each job ends; its outcome is written a moment later, in a batch.
    stored = 'sqlqueue_jobs{queue="default",status="SUCCESSFUL"} 150.0'
    last = wait_until(
        lambda: succeeded(page := scrape(port)) == 150 and stored in page.splitlines() and page, timeout=120, why=why
    )
    lines = last.splitlines()
    assert 'sqlqueue_jobs_finished_total{outcome="failed",queue="default",task="testapp.fail"} 1.0' in lines
    assert 'sqlqueue_queue_lag_seconds{queue="default"} 0.0' in lines
    assert "sqlqueue_workers_alive 2.0" in lines
    assert any(
        line.startswith('sqlqueue_job_duration_seconds_count{outcome="succeeded",task="tests.testapp.tasks.sleep"} 150')
        for line in lines
    )
    assert workers.stop() == 0, workers.text()
    assert scrape(port) == ""  # the server went with the supervisor
