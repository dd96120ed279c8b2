"""What a worker process sets up before its loop starts, seen in a real ``runworkers``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import POOLED, Workers, needs_django_pool
from tests.testapp.tasks import add, connections_opened

BATCHES = 40


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param({"CONN_MAX_AGE": "0"}, id="unpooled"),
        # Django refuses its pool beside connections kept open: a worker that kept the
        # project's pool died at start-up, five in a row, and runworkers gave up.
        pytest.param(POOLED, id="django-pool", marks=needs_django_pool),
    ],
)
def test_a_worker_keeps_its_connections_whatever_conn_max_age_says(
    start_workers: Callable[..., Workers], settings: dict[str, str]
) -> None:
    # Batches of 5 with CONN_MAX_AGE=0: a worker that let Django close its connection
    # after each round would open one per claim, per finish and per heartbeat.
    Job.objects.enqueue_many(Job.objects.build(add, (n, 0)) for n in range(BATCHES * 5))
    last = Job.objects.enqueue(connections_opened, priority=-100)
    workers = start_workers("--burst", "--processes", "1", "--threads", "1", "--batch-size", "5", **settings)
    assert workers.wait(120) == 0, workers.text
    last.refresh_from_db()
    assert last.status == JobStatus.SUCCESSFUL, workers.text
    # The claiming thread, the heartbeat's, the job thread's, the listener's, and slack
    # for one reconnect: far fewer than the batches.
    assert isinstance(last.result, int)
    assert last.result <= 5, last.result
