"""Leases as real processes: a task that holds the GIL past the lease keeps its job
(its supervisor beats for it), and a frozen worker process loses its jobs and, once
it resumes, starts none of those it had claimed and not started."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from django_sqlqueue.models import Job, JobStatus, Worker
from tests.support.workers import FAST_CLOCKS, Workers, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import hold_gil, noop, record_then_sleep

pytestmark = pytest.mark.slow

StartWorkers = Callable[..., Workers]

LEASE = float(FAST_CLOCKS["SQLQUEUE_LEASE"])


def runs() -> dict[str, int]:
    return dict(Receipt.objects.values_list("token", "runs"))


def test_a_task_holding_the_gil_past_the_lease_runs_once(start_workers: StartWorkers) -> None:
    held = Job.objects.enqueue(hold_gil, ("gil", int(LEASE) + 3), max_attempts=3)
    workers = start_workers("--processes", "2")
    wait_until(
        lambda: Job.objects.filter(pk=held.pk, status__in=[JobStatus.SUCCESSFUL, JobStatus.FAILED]).exists(),
        timeout=90,
        why=workers.text,
    )
    assert workers.stop() == 0, workers.text()
    held.refresh_from_db()
    assert (held.status, held.attempts, held.errors) == (JobStatus.SUCCESSFUL, 1, [])
    assert runs() == {"gil": 1}


def test_a_frozen_worker_starts_none_of_the_jobs_rescued_from_it(start_workers: StartWorkers) -> None:
    # Three quick jobs first grow the frozen worker's batches (1, 2, then 4), so that the
    # four slow ones are claimed in one batch: one running when it freezes, three waiting.
    Job.objects.enqueue_many(Job.objects.build(noop, priority=10) for _ in range(3))
    pause = 2.0
    Job.objects.enqueue_many(
        Job.objects.build(record_then_sleep, (f"token-{n}", pause), max_attempts=3) for n in range(4)
    )
    frozen = start_workers("--name", "frozen-", "--processes", "1", "--threads", "1", "--batch-size", "4")
    wait_until(lambda: Receipt.objects.exists(), timeout=60, why=frozen.text)
    worker = Worker.objects.get(name__startswith="frozen-")
    os.kill(worker.pid, signal.SIGSTOP)
    try:
        claimed = Job.objects.filter(worker=worker.name, status=JobStatus.RUNNING).count()
        assert claimed >= 2, f"the frozen worker held {claimed} job(s): nothing waited in its batch"
        (running,) = runs()
        rescuer = start_workers("--name", "rescuer-", "--processes", "1")
        wait_until(
            lambda: Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == 3 + 4,
            timeout=90,
            why=lambda: f"{frozen.text()}\n{rescuer.text()}",
        )
    finally:
        os.kill(worker.pid, signal.SIGCONT)
    # Its running job ends within the pause; a job it started next would write its receipt at once.
    time.sleep(pause + 1)
    assert frozen.stop() == 0, frozen.text()
    assert rescuer.stop() == 0, rescuer.text()

    # The job it ran when it froze ran again where it was rescued to (its attempt lost);
    # none of the others ran twice.
    assert runs() == {f"token-{n}": 2 if f"token-{n}" == running else 1 for n in range(4)}
