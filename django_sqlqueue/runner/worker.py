"""One worker process: claims batches, runs them on its threads outside any
transaction, and records their outcomes in batches. The supervisor
(``supervisor.py``) starts, watches and replaces these processes."""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from django.db import InterfaceError, OperationalError, close_old_connections
from django.dispatch import Signal

from django_sqlqueue import signals
from django_sqlqueue.conf import conf
from django_sqlqueue.registry import autodiscover
from django_sqlqueue.runner import execution

logger = logging.getLogger(__name__)

#: A batch should keep the threads busy for about this long: long enough to make the
#: claim's round trips cheap per job, short enough not to hoard jobs other workers could run.
BATCH_SECONDS = 1.0
#: Outcomes wait at most this long to be written together.
FLUSH_SECONDS = 0.2
#: What a lost or restarting database raises; anything else (a missing table, say) is a bug
#: or a misconfiguration and should stop the worker loudly rather than loop.
DATABASE_AWAY = (OperationalError, InterfaceError)
#: The wait before reconnecting to a database that went away, doubling up to the most.
RECONNECT_FIRST_SECONDS = 0.1
RECONNECT_MAX_SECONDS = 5.0

#: What running a job gives: the job, its result, and its error (None on success).
Outcome = tuple[Any, Any, "BaseException | None"]


@dataclass(frozen=True)
class WorkerConfig:
    """What the supervisor tells each worker process."""

    name: str
    queues: list[str] | None
    threads: int
    batch_size: int
    burst: bool
    log_level: int


class Budget:
    """The jobs left under ``--max-jobs``, shared by the supervisor's processes."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared

    def take(self, wanted: int) -> int:
        if self.shared is None:
            return wanted
        with self.shared.get_lock():
            granted = min(wanted, self.shared.value)
            self.shared.value -= granted
            return int(granted)

    def give_back(self, count: int) -> None:
        if self.shared is not None and count:
            with self.shared.get_lock():
                self.shared.value += count


def main(config: WorkerConfig, channel: Connection, budget: Any) -> None:
    """The worker process's entry point (a fresh interpreter: set Django up first)."""
    import django

    django.setup()
    logging.getLogger("django_sqlqueue").setLevel(config.log_level)
    stop = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    WorkerProcess(config, channel, Budget(budget), stop).run()


class WorkerProcess:
    """The claim → run → finish loop of one process."""

    def __init__(self, config: WorkerConfig, channel: Connection, budget: Budget, stop: threading.Event) -> None:
        self.config = config
        self.channel = channel
        self.channel_lock = threading.Lock()
        self.budget = budget
        self.stop = stop
        self.parent = os.getppid()
        self.succeeded = 0
        self.failed = 0
        self.seconds_per_job = 0.0
        self.last_batch_size = 0
        self.database_failures = 0

    def run(self) -> None:
        from django_sqlqueue.models import Job
        from django_sqlqueue.runner.wakeup import Waiter

        autodiscover()
        self._register()
        heartbeat = threading.Thread(target=self._beat, name="sqlqueue-heartbeat", daemon=True)
        heartbeat.start()
        waiter = Waiter(self.stop)
        try:
            waiter.listen()
            with ThreadPoolExecutor(self.config.threads, thread_name_prefix="sqlqueue-job") as pool:
                while not self.stop.is_set():
                    wanted = self.budget.take(self._batch_size())
                    if not wanted:
                        break
                    close_old_connections()
                    try:
                        batch = Job.objects.claim(worker_id=self.config.name, queues=self.config.queues, limit=wanted)
                    except DATABASE_AWAY as error:
                        self.budget.give_back(wanted)
                        self._database_down(error)
                        continue
                    self.database_failures = 0
                    self.budget.give_back(wanted - len(batch))
                    if batch:
                        waiter.found_work()
                        self._run_batch(pool, batch)
                    elif not batch.lost:
                        if self.config.burst:
                            break
                        waiter.wait()
        finally:
            waiter.close()
            self.stop.set()
            self._unregister()

    def _batch_size(self) -> int:
        """Start with one job per thread and grow while jobs prove quick, so that a
        worker never holds jobs it cannot start soon (others could run them)."""
        fits = math.ceil(self.config.threads * BATCH_SECONDS / self.seconds_per_job) if self.seconds_per_job else 0
        grown = min(2 * self.last_batch_size, fits) if self.last_batch_size else self.config.threads
        self.last_batch_size = max(self.config.threads, min(self.config.batch_size, grown))
        return self.last_batch_size

    def _run_batch(self, pool: ThreadPoolExecutor, batch: list[Any]) -> None:
        """Run a batch on the threads, writing outcomes every ``FLUSH_SECONDS`` and at the end.

        Each thread takes the next job from a shared queue until it is empty: one handoff
        per thread and batch rather than a future per job, which on a quick job would
        cost more than the job."""
        started = time.monotonic()
        waiting = deque(batch)
        outcomes: list[Outcome] = []  # appended by the threads, read here

        def run_jobs() -> None:
            while True:
                try:
                    job = waiting.popleft()
                except IndexError:
                    return
                outcomes.append(self._run_job(job))

        pending = {pool.submit(run_jobs) for _ in range(min(self.config.threads, len(batch)))}
        recorded = 0
        while pending:
            done, pending = wait(pending, timeout=FLUSH_SECONDS)
            for future in done:
                future.result()  # a thread that died of a BaseException takes the process down
            if fresh := outcomes[recorded:]:
                self._record(fresh)
                recorded += len(fresh)
        self.seconds_per_job = (time.monotonic() - started) / len(batch)

    def _run_job(self, job: Any) -> Outcome:
        """Run one job in a pool thread; ``(job, result, error)``, with ``error`` the
        ``_NOT_STARTED`` marker when the worker was stopping before the job began."""
        if self.stop.is_set():
            return job, None, _NOT_STARTED
        self._tell("start", job.pk, job.timeout)
        result: Any = None
        error: BaseException | None = None
        try:
            _send(signals.job_started, job=job)
            result = execution.run(job, self.config.name)
        except Exception as raised:  # any failure of the task is its outcome
            error = raised
        finally:
            close_old_connections()
        _send(signals.job_finished, job=job, result=result, error=error)
        return job, result, error

    def _record(self, outcomes: list[Outcome]) -> None:
        """Write a batch of outcomes, keeping at it while the database is away."""
        from django_sqlqueue.models import Job

        succeeded = {job: result for job, result, error in outcomes if error is None}
        failed = {job: error for job, _, error in outcomes if error is not None and error is not _NOT_STARTED}
        unstarted = [job for job, _, error in outcomes if error is _NOT_STARTED]
        self.budget.give_back(len(unstarted))
        written = self._persist(
            lambda: Job.objects.finish(worker_id=self.config.name, succeeded=succeeded, failed=failed)
        )
        self._persist(lambda: Job.objects.release(worker_id=self.config.name, unstarted=unstarted))
        if written < len(succeeded) + len(failed):
            logger.warning(
                "%s: %d of %d jobs had been taken away (rescued?) before their outcome was written",
                self.config.name,
                len(succeeded) + len(failed) - written,
                len(succeeded) + len(failed),
            )
        self.succeeded += len(succeeded)
        self.failed += len(failed)
        self._tell("done", [job.pk for job in (*succeeded, *failed, *unstarted)], len(succeeded), len(failed))

    def _persist(self, write: Callable[[], int]) -> int:
        """``write()``, tried until the database takes it: outcomes are all the proof
        that the jobs ran, and a rescue would run them again."""
        while True:
            try:
                count = write()
            except DATABASE_AWAY as error:
                self._database_down(error, keep_going=True)
            else:
                self.database_failures = 0
                return count

    def _database_down(self, error: Exception, *, keep_going: bool = False) -> None:
        """Wait before reconnecting: briefly at first (a killed connection comes back at
        once), longer while the server stays away (a restart), so as not to hammer it."""
        delay = min(RECONNECT_FIRST_SECONDS * 2**self.database_failures, RECONNECT_MAX_SECONDS)
        self.database_failures += 1
        logger.warning("%s: database error (%s); reconnecting in %.1f s", self.config.name, error, delay)
        close_old_connections()
        (time.sleep if keep_going else self.stop.wait)(delay)

    def _tell(self, *message: Any) -> None:
        with self.channel_lock:
            try:
                self.channel.send(message)
            except (BrokenPipeError, EOFError, OSError):
                self.stop.set()

    def _register(self) -> None:
        from django_sqlqueue.models import Worker

        while True:
            try:
                Worker.objects.update_or_create(
                    name=self.config.name,
                    defaults={"host": socket.gethostname(), "pid": os.getpid(), "queues": self.config.queues},
                )
                return
            except DATABASE_AWAY as error:
                self._database_down(error, keep_going=True)

    def _unregister(self) -> None:
        from django_sqlqueue.models import Worker

        try:
            Worker.objects.filter(name=self.config.name).delete()
        except DATABASE_AWAY as error:
            logger.warning("%s: could not unregister (%s); the lease will expire", self.config.name, error)

    def _beat(self) -> None:
        """Heartbeats on their own thread and connection, so a long job keeps its lease."""
        from django_sqlqueue.db.clock import DatabaseNow
        from django_sqlqueue.models import Worker

        while not self.stop.wait(conf.SQLQUEUE_HEARTBEAT_INTERVAL):
            if os.getppid() != self.parent:
                logger.warning("%s: the supervisor is gone; stopping", self.config.name)
                self.stop.set()
                break
            try:
                beat = Worker.objects.filter(name=self.config.name).update(
                    heartbeat_at=DatabaseNow(), jobs_succeeded=self.succeeded, jobs_failed=self.failed
                )
                if not beat:
                    self._register()
            except DATABASE_AWAY as error:
                logger.warning("%s: heartbeat failed (%s)", self.config.name, error)
            finally:
                close_old_connections()


def _send(signal: Signal, *, job: Any, **details: Any) -> None:
    """Send a job signal; a receiver's exception is logged and changes nothing about the job."""
    for receiver, response in signal.send_robust(sender=job.__class__, job=job, **details):
        if isinstance(response, Exception):
            logger.error("Receiver %r of a job signal raised", receiver, exc_info=response)


class _NotStarted(Exception):
    pass


_NOT_STARTED = _NotStarted()
