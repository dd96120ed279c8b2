"""A batch drained by real worker processes (``runworkers``): every job runs, the jobs
its jobs add (fan-out) keep it open, and each callback runs once, also when a worker
is killed (SIGKILL) in the middle and its jobs are rescued."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable

import pytest
from django.db.models import Max

from django_sqlqueue.db.building import HOOK_ERRORS
from django_sqlqueue.models import Job, JobBatch, JobStatus, Worker
from tests.support.batches import recording_callbacks
from tests.support.workers import Workers, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import fan_out, record

pytestmark = pytest.mark.slow

JOBS = 250
FANS, CHILDREN = 10, 10


def test_a_batch_with_fan_out_drained_by_two_processes_fires_its_callbacks_once(
    start_workers: Callable[..., Workers],
) -> None:
    with Job.objects.batch(**recording_callbacks(), description="drain") as batch:
        Job.objects.enqueue_many([Job.objects.build(record, (f"job-{n}",)) for n in range(JOBS)])
        Job.objects.enqueue_many([Job.objects.build(fan_out, (f"fan-{n}", CHILDREN)) for n in range(FANS)])
    workers = start_workers("--burst", "--processes", "2")
    assert workers.wait(240) == 0, workers.text()

    batch = JobBatch.objects.get(pk=batch.pk)
    total = JOBS + FANS * (1 + CHILDREN)
    assert (batch.total, batch.succeeded, batch.failed, batch.pending) == (total, total, 0, 0)
    assert set(batch.callback_jobs) == {"on_success", "on_finish"}
    callbacks = Job.objects.filter(pk__in=batch.callback_jobs.values())
    assert set(callbacks.values_list("status", flat=True)) == {JobStatus.SUCCESSFUL}
    assert Receipt.objects.count() == total + 2
    assert set(Receipt.objects.values_list("runs", flat=True)) == {1}
    # Each callback was enqueued after the batch's last job finished.
    last = Job.objects.filter(batch_id=batch.pk).aggregate(last=Max("finished_at"))["last"]
    assert all(job.enqueued_at >= last for job in callbacks)


def test_an_enqueue_hook_raising_on_the_callbacks_kills_no_worker_and_loses_no_callback(
    start_workers: Callable[..., Workers],
) -> None:
    """A hook written for web requests raises on the callbacks a worker's finish
    enqueues: the batch's jobs succeed once (no worker dies, no job is rescued as
    ``WorkerLost``), and each callback is enqueued, without the hook's changes but with a
    record of its error, and runs."""
    with Job.objects.batch(**recording_callbacks()) as batch:
        Job.objects.enqueue_many([Job.objects.build(record, (f"job-{n}",)) for n in range(20)])
    hook = "tests.support.middleware.request_scoped"
    workers = start_workers("--burst", "--processes", "1", SQLQUEUE_ENQUEUE_HOOKS=json.dumps([hook]))
    assert workers.wait(120) == 0, workers.text()
    output = workers.text()
    assert f"SQLQUEUE_ENQUEUE_HOOKS: {hook}, given a tests.testapp.tasks.batch_done job" in output, output
    assert "Rescued" not in output, output
    assert "exited with" not in output, output
    jobs = Job.objects.filter(batch_id=batch.pk)
    assert set(jobs.values_list("status", "attempts")) == {(JobStatus.SUCCESSFUL, 1)}
    batch = JobBatch.objects.get(pk=batch.pk)
    assert (batch.succeeded, batch.failed) == (20, 0)
    callbacks = Job.objects.filter(pk__in=batch.callback_jobs.values())
    # Recorded on each: which hook raised what.
    ended = callbacks.values_list("status", "meta")
    assert [(status, [entry["hook"] for entry in (meta or {})[HOOK_ERRORS]]) for status, meta in ended] == [
        (JobStatus.SUCCESSFUL, [hook])
    ] * 2
    assert set(Receipt.objects.values_list("runs", flat=True)) == {1}


def test_a_worker_killed_mid_batch_leaves_the_callbacks_to_fire_once_after_the_rescue(
    start_workers: Callable[..., Workers],
) -> None:
    with Job.objects.batch(**recording_callbacks()) as batch:
        Job.objects.enqueue_many([Job.objects.build(record, (f"job-{n}", 0.02)) for n in range(200)])
    workers = start_workers("--processes", "2")
    some_done = Job.objects.filter(batch_id=batch.pk, status=JobStatus.SUCCESSFUL)
    wait_until(lambda: some_done.count() >= 40, timeout=120, why=workers.text)
    victim = Job.objects.filter(batch_id=batch.pk, status=JobStatus.RUNNING).values_list("worker", flat=True).first()
    assert victim, "no job of the batch was running"
    os.kill(Worker.objects.get(name=victim).pid, signal.SIGKILL)
    # The supervisor starts another process, the rescue gives the killed jobs back, and they run again.
    finished = JobBatch.objects.filter(pk=batch.pk, finished_at__isnull=False)
    wait_until(finished.exists, timeout=180, why=workers.text)
    callbacks = Job.objects.filter(task="tests.testapp.tasks.batch_done")
    wait_until(lambda: not callbacks.exclude(status=JobStatus.SUCCESSFUL).exists(), timeout=60, why=workers.text)
    assert workers.stop() == 0, workers.text()

    batch = JobBatch.objects.get(pk=batch.pk)
    assert (batch.total, batch.succeeded, batch.failed) == (200, 200, 0)
    assert Job.objects.filter(batch_id=batch.pk, last_error_class="django_sqlqueue.exceptions.WorkerLost").exists()
    assert Receipt.objects.filter(token__startswith="job-").count() == 200
    assert dict(Receipt.objects.filter(token__in=["ok", "end"]).values_list("token", "runs")) == {"ok": 1, "end": 1}
    assert callbacks.count() == 2
