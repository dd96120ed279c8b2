"""What the proofs bind: a task whose effect is an external call, one pass of the real
worker loop in this process, and what production runs once a worker died."""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter

from due_work_harness.integrations.task_queues import keeping_signal_handlers

from django_sqlqueue import job
from django_sqlqueue.backends.compat import task
from django_sqlqueue.exceptions import WorkerLost
from django_sqlqueue.maintenance.rescue import rescue_worker
from django_sqlqueue.runner.config import WorkerOptions
from django_sqlqueue.runner.started import StartedJobs
from django_sqlqueue.runner.worker import Budget, WorkerProcess

#: The in-process worker's name, as ``runworkers`` names a worker process.
WORKER = "due-work-harness-1"


class Mailer:
    """An external system: what it was asked to send, by token. Its ``send`` is the seam
    after which the harness kills the worker: the mail went out, nothing was recorded."""

    def __init__(self) -> None:
        self.sent: Counter[str] = Counter()

    def send(self, token: str) -> None:
        self.sent[token] += 1


mailer = Mailer()


def at_once(error: BaseException, failed: object) -> float:
    """A retry due at once: recovery's one pass runs it."""
    return 0


@job(max_attempts=5, backoff=at_once)
def notify(token: str) -> None:
    """A ``@job`` task whose effect is one mail."""
    mailer.send(token)


@task
def notify_task(token: str) -> None:
    """The same as a Django ``@task``."""
    mailer.send(token)


def worker_pass(*_handle: object) -> None:
    """One ``runworkers --burst`` worker process's loop (``runner.worker.WorkerProcess``),
    in this process and on this thread's connection: register, claim, run on a job
    thread, finish, until nothing is ready; then unregister."""
    receiver, sender = multiprocessing.Pipe(duplex=False)
    options = WorkerOptions(name=WORKER, queues=None, threads=1, batch_size=10, burst=True, log_level=0)
    started = StartedJobs(multiprocessing.get_context(), options.batch_size)
    try:
        with keeping_signal_handlers():
            WorkerProcess(options, sender, started, Budget(None), threading.Event()).run()
    finally:
        receiver.close()
        sender.close()


def recover(*_handle: object) -> None:
    """What production runs once a worker died: its jobs rescued as the supervisor does
    for a worker process that exited (and the leader for one whose lease ran out: every
    job it held counts as started), then a worker's pass."""
    rescue_worker(WORKER, WorkerLost(f"worker {WORKER} died"))
    worker_pass()
