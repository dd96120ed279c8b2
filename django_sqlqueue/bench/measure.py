"""django-sqlqueue's side of the benchmark: the same work through the app."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Max, Min, QuerySet

from django_sqlqueue.models import Job, JobStatus, Worker
from django_sqlqueue.tasks import noop


def enqueue_one_by_one(queue: str, count: int) -> float:
    """Jobs per second through ``Job.objects.enqueue``, each in its own transaction."""
    began = time.perf_counter()
    for _ in range(count):
        Job.objects.enqueue(noop, queue=queue)
    return count / (time.perf_counter() - began)


def enqueue_many(queue: str, count: int, *, keys: int = 0, key_limit: int = 1) -> float:
    """Jobs per second through ``Job.objects.enqueue_many``; with ``keys``, the jobs take
    turns over that many concurrency keys, each limited to ``key_limit`` at once."""
    began = time.perf_counter()
    Job.objects.enqueue_many(
        Job.objects.build(noop, queue=queue, **_concurrency(index, keys, key_limit)) for index in range(count)
    )
    return count / (time.perf_counter() - began)


def enqueue_rows(queue: str, count: int) -> float:
    """Jobs per second through ``Job.objects.enqueue_rows``: plain rows, no ``Job`` objects."""
    began = time.perf_counter()
    Job.objects.enqueue_rows(((noop, (), None) for _ in range(count)), queue=queue)
    return count / (time.perf_counter() - began)


def _concurrency(index: int, keys: int, limit: int) -> dict[str, Any]:
    return {"concurrency_key": f"bench-{index % keys}", "concurrency_limit": limit} if keys else {}


def runworkers(*options: str) -> subprocess.Popen[bytes]:
    """``runworkers`` as a child process of this one, on the same settings and import path,
    whether this one was started by ``manage.py``, ``django-admin`` or a test runner."""
    command = [sys.executable, "-m", "django", "runworkers", "-v", "0", *options]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE,
        "PYTHONPATH": os.pathsep.join(path for path in sys.path if path),
    }
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)


class Drain(NamedTuple):
    """Jobs per second of one drain, measured two ways."""

    #: From the first claim to the last outcome, by the database's clock.
    running: float
    #: From the start of ``runworkers --burst`` to its exit: the start-up of Django and
    #: of the worker processes included, as a user waits for it.
    whole: float


def drain(queue: str, count: int, processes: int, batch_size: int, *, every_queue: bool = False) -> Drain:
    """Jobs per second of ``runworkers --burst`` over ``count`` ready jobs on ``queue``
    (:class:`Drain`). The workers claim from that queue alone, or with ``every_queue``
    from every queue, as ``runworkers`` does by default (the caller makes sure none else
    holds ready jobs)."""
    ran = burst(queue, processes, batch_size, every_queue=every_queue)
    return Drain(count / max(seconds(ran.jobs), 1e-3), count / ran.whole)


class Burst(NamedTuple):
    """What :func:`burst` ran: the jobs of its queue, and the seconds from the start of
    ``runworkers --burst`` to its exit."""

    jobs: QuerySet[Job]
    whole: float


def burst(queue: str, processes: int, batch_size: int, *, every_queue: bool = False) -> Burst:
    """Run ``runworkers --burst`` (see :func:`drain`) until nothing is ready (:class:`Burst`);
    raises ``RuntimeError`` unless the jobs of ``queue`` all succeeded."""
    queues = () if every_queue else ("--queues", queue)
    began = time.perf_counter()
    supervisor = runworkers("--burst", *queues, "--processes", str(processes), "--batch-size", str(batch_size))
    if supervisor.wait(timeout=3600):
        raise RuntimeError(f"runworkers exited with status {supervisor.returncode}")
    whole = time.perf_counter() - began
    jobs = Job.objects.filter(queue=queue)
    left = jobs.exclude(status=JobStatus.SUCCESSFUL).count()
    if left:
        raise RuntimeError(f"runworkers --burst left {left} jobs unfinished")
    return Burst(jobs, whole)


def seconds(jobs: QuerySet[Job]) -> float:
    """Seconds from the first start of ``jobs`` to their last finish, by the database's clock."""
    span = jobs.aggregate(first=Min("started_at"), last=Max("finished_at"))
    return float((span["last"] - span["first"]).total_seconds())


def started_workers(queue: str, processes: int) -> subprocess.Popen[bytes]:
    """``runworkers`` on ``queue`` alone, once its ``processes`` have started and gone idle;
    the caller stops it (:func:`stop`)."""
    supervisor = runworkers("--queues", queue, "--processes", str(processes))
    deadline = time.monotonic() + 60
    while Worker.objects.filter(queues=[queue]).count() < processes:
        if time.monotonic() > deadline or supervisor.poll() is not None:
            stop(supervisor)
            raise RuntimeError("the workers did not start")
        time.sleep(0.1)
    time.sleep(1.0)  # let them go idle
    return supervisor


def stop(supervisor: subprocess.Popen[bytes]) -> None:
    """Stop a ``runworkers`` started by :func:`started_workers`, and wait for its exit."""
    supervisor.send_signal(signal.SIGTERM)
    supervisor.wait(timeout=60)


def wait_latency(queue: str, samples: int) -> dict[str, float]:
    """Milliseconds from a job's finish to the return of ``Job.wait()`` on it, p50 and p95,
    two ways. ``p50``/``p95``: from the finish's commit, the job finished by a thread of
    this process (claimed, then finished in a transaction, while the wait runs), timed
    from the moment its commit returned by one clock (on PostgreSQL the news leaves with
    the commit, before it returns: a wait may end a little earlier, below 0). ``worker_p50``/
    ``worker_p95``: a job run by an idle ``runworkers`` process, timed from the time the
    database gave its finish (its ``UPDATE``'s, before the commit: the commit's flush to
    disk is in it) to this process's clock, which is the same clock when the database
    runs on this host."""
    supervisor = started_workers(queue, 1)
    by_worker = []
    try:
        for _ in range(samples):
            job = Job.objects.enqueue(noop, queue=queue)
            job.wait(timeout=60)
            returned = time.time()
            if job.finished_at is not None:  # None: deleted by its success (SQLQUEUE_RETENTION)
                by_worker.append((returned - job.finished_at.timestamp()) * 1000)
    finally:
        stop(supervisor)
    by_thread = [_finished_in_a_thread(f"{queue}-thread") for _ in range(samples)]
    if len(by_worker) < 2:
        raise RuntimeError("the jobs' finishes are not kept (SQLQUEUE_RETENTION): nothing to time")
    worker, thread = (statistics.quantiles(waits, n=100, method="inclusive") for waits in (by_worker, by_thread))
    return {"p50": thread[49], "p95": thread[94], "worker_p50": worker[49], "worker_p95": worker[94]}


def _finished_in_a_thread(queue: str) -> float:
    """Milliseconds from the commit of a finish in another thread (as the client saw it
    return) to the return of the wait for that job, begun before it."""
    job = Job.objects.enqueue(noop, queue=queue)
    committed = 0.0

    def commit_seen() -> None:
        nonlocal committed
        committed = time.perf_counter()

    def finish() -> None:
        try:
            time.sleep(0.005)  # the wait has begun
            claimed = Job.objects.claim(worker_id=f"{queue}-bench", queues=[queue], limit=1)
            with transaction.atomic():
                # First of the callbacks: before the news sent once it commits (db/finished.py).
                transaction.on_commit(commit_seen)
                Job.objects.finish(worker_id=f"{queue}-bench", succeeded=dict.fromkeys(claimed))
        finally:
            connections.close_all()

    thread = threading.Thread(target=finish, name="sqlqueue-bench-finish")
    thread.start()
    try:
        job.wait(timeout=60)
        waited = time.perf_counter()
    finally:
        thread.join()
    return (waited - committed) * 1000


def latency(queue: str, samples: int, processes: int, spacing: float) -> dict[str, float]:
    """Milliseconds from an enqueue to its job's start, with idle workers waiting: its
    percentiles, from the time the database gave the job (its ``INSERT``'s, before the
    commit), and ``enqueue_p50``, the median time the enqueue itself took, commit
    included: the commit ended somewhere within it."""
    supervisor = started_workers(queue, processes)
    try:
        enqueues = []
        for _ in range(samples):
            began = time.perf_counter()
            Job.objects.enqueue(noop, queue=queue)
            enqueues.append((time.perf_counter() - began) * 1000)
            time.sleep(spacing)
        while Job.objects.filter(queue=queue).exclude(status=JobStatus.SUCCESSFUL).exists():
            time.sleep(0.1)
    finally:
        stop(supervisor)
    times = Job.objects.filter(queue=queue, started_at__isnull=False).values_list("enqueued_at", "started_at")
    waits = sorted((started - enqueued).total_seconds() * 1000 for enqueued, started in times if started)
    percentiles = statistics.quantiles(waits, n=100, method="inclusive")
    return {
        "p50": percentiles[49],
        "p95": percentiles[94],
        "p99": percentiles[98],
        "enqueue_p50": statistics.median(enqueues),
    }
