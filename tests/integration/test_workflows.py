"""A workflow drained by real worker processes (``runworkers --burst --processes 2``):
every job runs once, each after the jobs it waits for, and a failure cancels what
waits on it; and a worker killed (SIGKILL) while it runs a parent leaves its child
waiting until the rescued parent has finished."""

from __future__ import annotations

import contextlib
import datetime
import itertools
import os
import signal
import time
from collections.abc import Callable

import pytest
from django.db.models import Max

from django_sqlqueue import workflows
from django_sqlqueue.models import Job, JobBatch, JobStatus, Worker
from tests.support.batches import recording_callbacks
from tests.support.workers import Workers, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import fail, gather, record, record_then_sleep

pytestmark = pytest.mark.slow

ROOTS = 120


def test_a_workflow_of_a_few_hundred_jobs_runs_each_job_once_in_order(start_workers: Callable[..., Workers]) -> None:
    roots = Job.objects.enqueue_many([Job.objects.build(record, (f"root-{n}",)) for n in range(ROOTS)])
    # Each middle job waits for two neighbouring roots; the final one for every middle job.
    middles = Job.objects.enqueue_many(
        [Job.objects.build(record, (f"middle-{n}",), after=[roots[n], roots[(n + 1) % ROOTS]]) for n in range(ROOTS)]
    )
    final = Job.objects.enqueue(gather, ("final",), after=middles)
    steps = workflows.chain(Job.objects.build(record, (f"step-{n}",)) for n in range(40))
    failing = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    stopped = Job.objects.enqueue(record, ("never",), after=[failing, roots[0]])
    cleanup = Job.objects.enqueue(record, ("cleanup",), after=[failing], after_failure="run")

    workers = start_workers("--burst", "--processes", "2")
    assert workers.wait(240) == 0, workers.text()

    ran = [*roots, *middles, final, *steps, cleanup]
    assert Job.objects.filter(pk__in=[job.pk for job in ran], status=JobStatus.SUCCESSFUL).count() == len(ran)
    assert Receipt.objects.count() == len(ran)
    assert set(Receipt.objects.values_list("runs", flat=True)) == {1}
    assert not Receipt.objects.filter(token="never").exists()
    assert Job.objects.get(pk=stopped.pk).status == JobStatus.CANCELLED
    assert Job.objects.get(pk=final.pk).result == {str(job.pk): None for job in middles}
    # Each job started after the jobs it waits for finished.
    for n, middle in enumerate(middles):
        assert _last_finished([roots[n], roots[(n + 1) % ROOTS]]) <= _times(middle)[0]
    assert _last_finished(middles) <= _times(final)[0]
    assert all(_times(before)[1] <= _times(after)[0] for before, after in itertools.pairwise(steps))


def test_a_worker_killed_mid_parent_releases_its_child_once_after_the_rescue(
    start_workers: Callable[..., Workers],
) -> None:
    parent = Job.objects.enqueue(record_then_sleep, ("parent", 6.0), max_attempts=3)
    child = Job.objects.enqueue(record, ("child",), after=[parent])
    workers = start_workers("--processes", "1")
    # Killed once its task has begun: a process killed between its claim and the task's
    # start gives the job back uncounted (no WorkerLost), which this test is not about.
    began = Receipt.objects.filter(token="parent")
    wait_until(began.exists, timeout=60, why=workers.text)
    os.kill(Worker.objects.get(name=Job.objects.get(pk=parent.pk).worker).pid, signal.SIGKILL)
    assert Job.objects.get(pk=child.pk).status == JobStatus.WAITING
    # The supervisor starts another process; the rescue gives the parent back, and it runs again.
    done = Job.objects.filter(pk=child.pk, status=JobStatus.SUCCESSFUL)
    wait_until(done.exists, timeout=120, why=workers.text)
    assert workers.stop() == 0, workers.text()
    parent.refresh_from_db()
    assert (parent.status, parent.last_error_class) == (JobStatus.SUCCESSFUL, "django_sqlqueue.exceptions.WorkerLost")
    assert Receipt.objects.get(token="parent").runs == 2
    assert Receipt.objects.get(token="child").runs == 1
    assert _times(parent)[1] <= _times(child)[0]


def _times(job: Job) -> tuple[datetime.datetime, datetime.datetime]:
    """When ``job`` started and finished (its last attempt)."""
    started, finished = Job.objects.values_list("started_at", "finished_at").get(pk=job.pk)
    assert started is not None
    assert finished is not None
    return started, finished


def _last_finished(jobs: list[Job]) -> datetime.datetime:
    last = Job.objects.filter(pk__in=[job.pk for job in jobs]).aggregate(last=Max("finished_at"))["last"]
    assert isinstance(last, datetime.datetime)
    return last


def test_workers_killed_again_and_again_mid_workflow_run_every_job_in_order(
    start_workers: Callable[..., Workers],
) -> None:
    """A chord of 2,000 jobs and a chain of 200 steps, all of one batch, the worker
    processes SIGKILLed several times while they run (the supervisor starts others, the
    rescue gives their jobs back): every job ends SUCCESSFUL, each once but for attempts a
    kill cut short (at most one more run each, a WorkerLost in its errors), each after the
    jobs it waits for; the batch's callbacks fire once each."""
    with Job.objects.batch(**recording_callbacks()) as batch:
        group, final = workflows.chord(
            [Job.objects.build(record, (f"leaf-{n}",)) for n in range(2000)], Job.objects.build(gather, ("final",))
        )
        steps = workflows.chain(Job.objects.build(record, (f"step-{n}", 0.01)) for n in range(200))
    workers = start_workers("--processes", "2")
    for _ in range(3):
        wait_until(Job.objects.filter(status=JobStatus.RUNNING).exists, timeout=60, why=workers.text)
        for pid in Worker.objects.values_list("pid", flat=True):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(1.0)
    everything = [*group, final, *steps]
    done = Job.objects.filter(pk__in=[job.pk for job in everything], status=JobStatus.SUCCESSFUL)
    wait_until(lambda: done.count() == len(everything), timeout=600, why=workers.text)
    # The last finish enqueues the callbacks: the workers run them before they stop (a
    # stop gives back what they claimed and had not started, READY again).
    callbacks = Job.objects.filter(task="tests.testapp.tasks.batch_done")
    wait_until(lambda: callbacks.filter(status=JobStatus.SUCCESSFUL).count() == 2, timeout=60, why=workers.text)
    assert workers.stop() == 0, workers.text()
    lost = dict(Job.objects.filter(pk__in=[job.pk for job in everything]).values_list("pk", "errors"))
    for job in everything:
        runs = Receipt.objects.get(token=job.args[0]).runs
        # A kill after the task's side effect and before its outcome makes one run more.
        assert 1 <= runs <= 1 + len(lost[job.pk]), (job.pk, lost[job.pk])
        assert all(error["exception_class_path"].endswith("WorkerLost") for error in lost[job.pk])
    assert _last_finished(group) <= _times(final)[0]
    assert all(_times(before)[1] <= _times(after)[0] for before, after in itertools.pairwise(steps))
    assert Job.objects.get(pk=final.pk).result == {str(job.pk): None for job in group}
    batch = JobBatch.objects.get(pk=batch.pk)
    assert (batch.total, batch.succeeded, batch.failed) == (len(everything), len(everything), 0)
    ran = dict(Receipt.objects.filter(token__in=["ok", "ko", "end"]).values_list("token", "runs"))
    assert ran == {"ok": 1, "end": 1}
