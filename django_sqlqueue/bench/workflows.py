"""The workflows' side of the benchmark (``sqlqueue_bench --workflow``): a
chord, a group with one job after all of it, and a chain, each step after the one
before, written by ``django_sqlqueue.workflows`` and run by ``runworkers --burst``.

A chord's time is the group's drain and the release of its callback; a chain's is
one step after another, each claimed only once the finish of the one before has
released it: its time per step is the round trips of a claim, a finish and a
release, which batching cannot share out."""

from __future__ import annotations

import time

from django.db.models import Max, Q, QuerySet

from django_sqlqueue import workflows
from django_sqlqueue.bench.measure import burst, seconds
from django_sqlqueue.db.dependencies import forget
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job
from django_sqlqueue.tasks import noop


def chord(queue: str, count: int, processes: int, batch_size: int, *, every_queue: bool) -> dict[str, float]:
    """``count`` jobs and a callback after them all, on ``queue``: seconds to enqueue
    them (``workflows.chord``), seconds from the first job's start to the callback's
    finish, and milliseconds from the last job's finish to the callback's start (by
    the database's clock)."""
    began = time.perf_counter()
    _, callback = workflows.chord(
        (Job.objects.build(noop, queue=queue) for _ in range(count)), Job.objects.build(noop, queue=queue)
    )
    enqueued = time.perf_counter() - began
    jobs = burst(queue, processes, batch_size, every_queue=every_queue).jobs
    its = Q(pk=callback.pk)
    times = jobs.aggregate(last=Max("finished_at", filter=~its), callback=Max("started_at", filter=its))
    return {
        "enqueue_s": enqueued,
        "run_s": seconds(jobs),
        "callback_ms": (times["callback"] - times["last"]).total_seconds() * 1000,
    }


def chain(queue: str, steps: int, processes: int, batch_size: int, *, every_queue: bool) -> dict[str, float]:
    """``steps`` jobs on ``queue``, each after the one before: seconds to enqueue them
    (``workflows.chain``), seconds from the first step's start to the last one's finish
    (by the database's clock), and that time per step in milliseconds."""
    began = time.perf_counter()
    workflows.chain(Job.objects.build(noop, queue=queue) for _ in range(steps))
    enqueued = time.perf_counter() - began
    run = seconds(burst(queue, processes, batch_size, every_queue=every_queue).jobs)
    return {"enqueue_s": enqueued, "run_s": run, "per_step_ms": run / steps * 1000}


def remove(jobs: QuerySet[Job]) -> None:
    """Delete ``jobs`` and their links (``JobDependency`` rows, which no foreign key
    deletes with them)."""
    forget(queue_db(Job), list(jobs.values_list("pk", flat=True)))
    jobs.delete()
