"""One worker process: claims batches, runs them on its threads outside any
transaction, and records their outcomes in batches. The supervisor
(``supervisor.py``) starts, watches and replaces these processes."""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from django.db import Error, close_old_connections, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.conf import conf
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.engines.errors import is_unavailable
from django_sqlqueue.db.expressions import PrimaryKeyIn
from django_sqlqueue.db.finishing import still_held
from django_sqlqueue.db.pausing import REFRESH_SECONDS, PausedQueues
from django_sqlqueue.maintenance.rescue import rescue_worker
from django_sqlqueue.models import Job, JobStatus, Worker
from django_sqlqueue.rules.lifecycle import FINISHED, OUTCOME_STATUS
from django_sqlqueue.rules.registry import autodiscover
from django_sqlqueue.runner.config import WorkerOptions
from django_sqlqueue.runner.execution import JobOutcome, attempt
from django_sqlqueue.runner.memory import resident_mib
from django_sqlqueue.runner.middleware import chain
from django_sqlqueue.runner.started import StartedJobs
from django_sqlqueue.runner.wakeup import Waiter

logger = logging.getLogger(__name__)
#: What a write reports: a count, or counts by status.
Written = TypeVar("Written")
#: How long a stopping worker waits for its heartbeat's last beat before it unregisters.
HEARTBEAT_JOIN_SECONDS = 10.0

#: A batch should keep the threads busy for about this long: long enough to make the
#: claim's round trips cheap per job, short enough not to hoard jobs other workers could run.
BATCH_SECONDS = 1.0
#: Outcomes wait at most this long to be written together.
FLUSH_SECONDS = 0.2
#: The wait before reconnecting to a database that went away, doubling up to the most.
RECONNECT_FIRST_SECONDS = 0.1
RECONNECT_MAX_SECONDS = 5.0


class Budget:
    """The jobs left under ``--max-jobs``, shared by the supervisor's processes: a claim
    takes its share, and :meth:`give_back_unfinished` keeps charged only the jobs whose outcome
    written finished them."""

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

    def give_back_unfinished(self, taken: int, written: Mapping[str, int]) -> None:
        """Of ``taken`` jobs, whose outcomes written are ``written`` (counts by outcome),
        give back all but those that ended ``SUCCESSFUL``, ``FAILED`` or ``CANCELLED``:
        a failed attempt to retry, a snooze, a job given back unstarted (or charged
        ``WorkerLost`` by a rescue, to run again) will run after all, and a job the
        fence kept out was not written. ``--max-jobs`` counts the jobs finished."""
        self.give_back(taken - finished(written))


def finished(written: Mapping[str, int]) -> int:
    """Of the outcomes ``written`` (counts by outcome), the jobs they ended
    (``SUCCESSFUL``, ``FAILED``, ``CANCELLED``)."""
    return sum(count for outcome, count in written.items() if OUTCOME_STATUS[outcome] in FINISHED)


class WorkerProcess:
    """The claim → run → finish loop of one process: a ``runworkers`` worker process, which
    tells its supervisor through ``channel``; or the embedded worker of a web process
    (``embedded.py``), with no ``channel``: nobody to tell, no supervisor to outlive."""

    def __init__(
        self,
        config: WorkerOptions,
        channel: Connection | None,
        started: StartedJobs,
        budget: Budget,
        stop: threading.Event,
    ) -> None:
        self.config = config
        self.channel = channel
        self.started = started
        self.channel_lock = threading.Lock()
        self.budget = budget
        self.stop = stop
        #: The supervisor's pid: the worker stops once it is gone. None when embedded.
        self.parent = None if channel is None else os.getppid()
        self.succeeded = 0
        self.failed = 0
        #: Candidates other workers locked first, summed over this process's claims.
        self.candidates_lost = 0
        #: The last batch's wall time divided by its jobs (so, per thread).
        self.seconds_per_job = 0.0
        self.last_batch_size = 0
        self.database_failures = 0
        self.paused = PausedQueues()
        #: The jobs running on this process's threads, by id: the heartbeat tells them
        #: of cancel requests.
        self.running: dict[int, Job] = {}
        #: The database error the last claim met, until its jobs are given back: its commit
        #: may have reached the database while the answer was lost with the connection
        #: (see :meth:`_give_back_unanswered`).
        self.claim_unanswered: Error | None = None
        #: Set when it learns that jobs of its batch were taken from it (its heartbeat
        #: found its row gone, or a finish was fenced off): it starts no other job of
        #: that batch. Cleared by the next claim.
        self.lost = False
        #: When its last heartbeat that found its row was sent (``time.monotonic()``):
        #: within half a lease of it, nobody can have rescued its jobs.
        self.beat_at = time.monotonic()
        self.lease_half = conf.SQLQUEUE_LEASE / 2
        #: The connections of its job threads, closed when it stops (:meth:`_lend_connections`).
        self.job_connections: list[BaseDatabaseWrapper] = []
        #: ``SQLQUEUE_MIDDLEWARE`` around every attempt, built once, before the process is ready.
        self.through = chain(config.name)

    def run(self) -> None:
        autodiscover()
        self._register()
        self._tell("ready")
        if self.config.max_memory is not None and (fresh := resident_mib()) > self.config.max_memory:
            logger.warning(
                "%s: a fresh worker process already holds %.0f MiB, more than --max-memory %d: "
                "each process will be recycled after its first batch",
                self.config.name,
                fresh,
                self.config.max_memory,
            )
        heartbeat = threading.Thread(target=self._heartbeat, name="sqlqueue-heartbeat", daemon=True)
        heartbeat.start()
        waiter = Waiter(self.stop, self.config.queues)
        try:
            waiter.listen()
            with ThreadPoolExecutor(
                self.config.threads, thread_name_prefix="sqlqueue-job", initializer=self._lend_connections
            ) as pool:
                while not self.stop.is_set():
                    if worn := self.worn_out():
                        self._tell("recycle", worn)  # the supervisor logs it, and replaces this process
                        break
                    wanted = self.budget.take(min(self.next_batch_size(), self._jobs_left()))
                    if not wanted:
                        break
                    close_old_connections()
                    try:
                        if self.claim_unanswered is not None:
                            self._give_back_unanswered(self.claim_unanswered)
                        paused = self.paused.current(changed=waiter.take_queues_changed())
                        batch = Job.objects.claim(
                            worker_id=self.config.name, queues=self.config.queues, limit=wanted, skip_queues=paused
                        )
                    except Error as error:
                        self.claim_unanswered = error
                        self.budget.give_back(wanted)
                        self._database_down(error)
                        continue
                    self.database_failures = 0
                    self.candidates_lost += batch.lost
                    self.budget.give_back(wanted - len(batch))
                    if batch:
                        waiter.found_work()
                        self._run_batch(pool, batch)
                    elif not batch.lost:
                        if self.config.burst and not self._held_back(paused):
                            break
                        # While a queue is paused, its resume is read within a second.
                        waiter.wait(longest=REFRESH_SECONDS if paused else None)
        finally:
            waiter.close()
            self.stop.set()
            # A beat after the unregister would find no row and register the worker again,
            # alive for a lease after it stopped: the heartbeat ends first.
            heartbeat.join(timeout=HEARTBEAT_JOIN_SECONDS)
            if self.claim_unanswered is not None:  # stopped before the next claim could give them back
                self._give_back_unanswered(self.claim_unanswered, at_exit=True)
            self._unregister()
            for wrapper in self.job_connections:  # their threads have ended with the pool
                wrapper.close()

    def _lend_connections(self) -> None:
        """In each job thread as it starts: its connections (Django's, one per thread)
        may be closed by the worker's thread once the pool has ended, which the job
        threads themselves cannot do. A process that lives on after its worker stops
        (embedded workers) would leak them otherwise."""
        for alias in connections:
            wrapper = connections[alias]
            wrapper.inc_thread_sharing()
            self.job_connections.append(wrapper)

    def _give_back_unanswered(self, error: Error, *, at_exit: bool = False) -> None:
        """Put back the jobs a claim took whose answer never came (it raised ``error``):
        the connection died after the database committed the claim, so the jobs are
        ``RUNNING`` for this worker, which never got them. Its heartbeat keeps its lease,
        and nothing would rescue them while this process lives.

        Between batches this process holds no job (every outcome is written before the
        next claim), so every job the database says it holds is one of those: rescued as
        started by nobody, they go back to ``READY``, their attempt not counted.

        ``at_exit``: the process is stopping, and a database still unavailable leaves them to the
        rescue of workers gone without a row (after ``SQLQUEUE_LEASE``)."""
        lost = ConnectionError(f"the answer to its claim was lost with the connection ({error})")
        try:
            rescue_worker(self.config.name, lost, started=())
        except Error as problem:
            if not at_exit:
                raise
            logger.warning(
                "%s: could not give back the jobs of a claim whose answer was lost (%s)", self.config.name, problem
            )
            return
        self.claim_unanswered = None

    def _held_back(self, paused: Collection[str]) -> bool:
        """Whether jobs of its queues are due that its claim left, held back by their
        concurrency or rate limits: a burst run waits for them, as they will be claimed
        when a slot or a token frees. Jobs of paused queues are not waited for."""
        due = Job.objects.on_queue_db().ready().in_queues(self.config.queues).exclude(queue__in=list(paused))
        try:
            return due.exists()
        except Error as error:
            self._database_down(error)
            return True  # asked again once the database answers

    def next_batch_size(self) -> int:
        """Start with one job per thread and grow while jobs prove quick, so that a
        worker never holds jobs it cannot start soon (others could run them).

        A batch holds about ``BATCH_SECONDS`` of wall time whatever ``--threads`` is:
        ``seconds_per_job`` is the last batch's wall time per job, already shared
        among the threads.

        Never more than ``--batch-size``, even with more threads: the process's started-jobs
        slots (and the supervisor's timeouts, which read them) hold one batch, and a claim
        above it crashed the process as its extra jobs started. Threads beyond the batch
        size stay idle (``runworkers`` warns of it)."""
        fits = math.ceil(BATCH_SECONDS / self.seconds_per_job) if self.seconds_per_job else 0
        grown = min(2 * self.last_batch_size, fits) if self.last_batch_size else self.config.threads
        self.last_batch_size = min(self.config.batch_size, max(self.config.threads, grown))
        return self.last_batch_size

    def worn_out(self) -> str | None:
        """Why this process should make way for a fresh one (``--max-jobs-per-process``,
        ``--max-memory``), checked between batches; None while it should go on."""
        ran = self.succeeded + self.failed
        most = self.config.max_jobs_per_process
        if most is not None and ran >= most:
            return f"ran {ran} jobs (--max-jobs-per-process {most})"
        # Only after a job: a limit below a fresh process's size must not respawn idle ones forever.
        if self.config.max_memory is not None and ran and (held := resident_mib()) > self.config.max_memory:
            return f"holds {held:.0f} MiB (--max-memory {self.config.max_memory})"
        return None

    def _jobs_left(self) -> int:
        """The most jobs the next claim may take before ``--max-jobs-per-process``."""
        if self.config.max_jobs_per_process is None:
            return self.config.batch_size
        return self.config.max_jobs_per_process - self.succeeded - self.failed

    def _run_batch(self, pool: ThreadPoolExecutor, batch: list[Job]) -> None:
        """Run a batch on the threads, writing outcomes every ``FLUSH_SECONDS`` and at the end.

        Each thread takes the next job from a shared queue until it is empty: one handoff
        per thread and batch rather than a future per job, which on a quick job would
        cost more than the job."""
        started = time.monotonic()
        self.lost = False
        waiting = deque(batch)
        outcomes: list[JobOutcome] = []  # appended by the threads, read here

        def run_jobs() -> None:
            while True:
                try:
                    job = waiting.popleft()
                except IndexError:
                    return
                outcomes.append(self.run_job(job))

        pending = {pool.submit(run_jobs) for _ in range(min(self.config.threads, len(batch)))}
        recorded = 0
        while pending:
            done, pending = wait(pending, timeout=FLUSH_SECONDS)
            for future in done:
                future.result()  # a thread that died of a BaseException takes the process down
            if fresh := outcomes[recorded:]:
                self.record(fresh)
                recorded += len(fresh)
        self.seconds_per_job = (time.monotonic() - started) / len(batch)

    def run_job(self, job: Job) -> JobOutcome:
        """Run one claimed job (in a pool thread), or give it back unstarted when the
        worker is stopping; its slot in ``started`` tells the supervisor when it started,
        for its timeout."""
        if self.stop.is_set() or not self._still_holds(job):
            return JobOutcome(job, started=False)
        pk = job.pk
        self.started.start(pk, job.timeout)
        self.running[pk] = job
        try:
            return attempt(job, self.config.name, self.through)
        finally:
            self.started.ran(pk)
            del self.running[pk]
            # A task may leave its thread's connection broken or past its age: not the next job's problem.
            close_old_connections()

    def _still_holds(self, job: Job) -> bool:
        """Whether ``job`` may start: not once the worker learnt that its batch was taken
        from it, and, when its heartbeat is late by half a lease (the process was frozen,
        or a task held the GIL), only if one fenced query finds the job still its own.
        A frozen worker's jobs are rescued and run elsewhere; it must not run them again."""
        if not self.lost and time.monotonic() - self.beat_at <= self.lease_half:
            return True
        if not self.lost:
            try:
                self.lost = not still_held(Job.objects.on_queue_db(), self.config.name, [job]).exists()
            except Error as error:  # given back unstarted (fenced), to run later
                logger.warning("%s: could not check that job %s is still held (%s)", self.config.name, job.pk, error)
                return False
            finally:
                close_old_connections()
            if self.lost:
                logger.warning(
                    "%s: its lease was lost and job %s taken from it: it starts no other job of its batch",
                    self.config.name,
                    job.pk,
                )
        return not self.lost

    def record(self, outcomes: list[JobOutcome]) -> None:
        """Write a batch of outcomes, keeping at it while the database is unavailable."""
        succeeded = {out.job: out.result for out in outcomes if out.started and out.error is None and not out.written}
        failed = {out.job: out.failure for out in outcomes if out.started and out.failure is not None}
        unstarted = [out.job for out in outcomes if not out.started]
        # Committed with their tasks' writes (runner/completion.py): only counted here.
        completed = [out.written for out in outcomes if out.written is not None]
        ended = Counter(
            outcome.transition.outcome
            for outcome in self._persist(
                lambda: Job.objects.finish_as_decided(worker_id=self.config.name, succeeded=succeeded, failed=failed)
            )
        )
        self._persist(lambda: Job.objects.release(worker_id=self.config.name, unstarted=unstarted))
        ended.update(outcome.transition.outcome for outcome in completed)
        self.budget.give_back_unfinished(len(outcomes), ended)
        if (written := sum(ended.values()) - len(completed)) < len(succeeded) + len(failed):
            self.lost = True
            logger.warning(
                "%s: %d of %d jobs had been taken away (rescued?) before their outcome was written",
                self.config.name,
                len(succeeded) + len(failed) - written,
                len(succeeded) + len(failed),
            )
        self.succeeded += len(succeeded) + len(completed)
        self.failed += len(failed)
        ran = [job.pk for job in (*succeeded, *failed)] + [outcome.job.pk for outcome in completed]
        self.started.recorded(ran)
        # What was written, not what was meant: the supervisor's counts follow the rows.
        self._tell("done", [*ran, *(job.pk for job in unstarted)], dict(ended))

    def _persist(self, write: Callable[[], Written]) -> Written:
        """``write()``, tried until the database takes it: outcomes are all the proof
        that the jobs ran, and a rescue would run them again. (``finish`` itself turns
        an outcome the database refuses into that job's failed attempt; a lost
        connection, however often, is the database unavailable.) A stopping worker keeps
        trying, and says so: past the shutdown grace period the supervisor kills it and
        gives those jobs back with a ``WorkerLost`` error rather than a wrong outcome."""
        told = False
        while True:
            try:
                count = write()
            except Error as error:
                self._database_down(error, keep_going=True)
                if self.stop.is_set() and not told:
                    told = True
                    logger.warning(
                        "%s: stopping with outcomes not yet written: it keeps trying until the shutdown "
                        "grace period (SQLQUEUE_SHUTDOWN_GRACE) runs out; then it is killed, and their jobs "
                        "rescued as WorkerLost",
                        self.config.name,
                    )
            else:
                self.database_failures = 0
                return count

    def _database_down(self, error: Error, *, keep_going: bool = False) -> None:
        """Wait before reconnecting: briefly at first (a killed connection comes back at
        once), longer while the server stays unavailable (a restart), so as not to hammer it.

        Raises ``error`` itself unless the database is unavailable: a missing table or column
        is a bug or a misconfiguration that trying again cannot cure."""
        if not is_unavailable(error):
            raise error
        delay = min(RECONNECT_FIRST_SECONDS * 2**self.database_failures, RECONNECT_MAX_SECONDS)
        self.database_failures += 1
        logger.warning("%s: database error (%s); reconnecting in %.1f s", self.config.name, error, delay)
        close_old_connections()
        (time.sleep if keep_going else self.stop.wait)(delay)

    def _tell(self, *message: Any) -> None:
        if self.channel is None:
            return
        with self.channel_lock:
            try:
                self.channel.send(message)
            except (BrokenPipeError, EOFError, OSError):
                self.stop.set()

    def _register(self) -> None:
        while True:
            try:
                identity = {"host": socket.gethostname(), "pid": os.getpid(), "queues": self.config.queues}
                Worker.objects.update_or_create(
                    name=self.config.name,
                    defaults=identity,
                    create_defaults={**identity, "started_at": DatabaseNow(), "heartbeat_at": DatabaseNow()},
                )
                return
            except Error as error:
                self._database_down(error, keep_going=True)

    def _unregister(self) -> None:
        try:
            Worker.objects.filter(name=self.config.name).delete()
        except Error as error:  # at exit, whatever it is: the lease will expire
            logger.warning("%s: could not unregister (%s); the lease will expire", self.config.name, error)

    def _learn_cancels(self) -> None:
        """Mark the running jobs someone asked to cancel (``current_job().cancel_requested``),
        and tell the supervisor, which stops the process after ``SQLQUEUE_CANCEL_GRACE``
        if the job is still running then. One query, only while jobs run."""
        running = dict(self.running)
        if not running:
            return
        requested = Job.objects.on_queue_db().filter(
            PrimaryKeyIn(running), worker=self.config.name, status=JobStatus.RUNNING, cancel_requested_at__isnull=False
        )
        for pk, at in requested.values_list("pk", "cancel_requested_at"):
            job = running[pk]
            if job.cancel_requested_at is None:
                job.cancel_requested_at = at
                self._tell("cancel", pk)

    def _heartbeat(self) -> None:
        """The heartbeat thread: :meth:`_beat`, then its connection closed, which a process
        that lives on after its worker stops (embedded workers) would leak."""
        try:
            self._beat()
        finally:
            connections.close_all()

    def _beat(self) -> None:
        """Heartbeats on their own thread and connection, so a long job keeps its lease."""
        while not self.stop.wait(conf.SQLQUEUE_HEARTBEAT_INTERVAL):
            if self.parent is not None and os.getppid() != self.parent:
                logger.warning("%s: the supervisor is gone; stopping", self.config.name)
                self.stop.set()
                break
            sent = time.monotonic()
            try:
                beat = Worker.objects.filter(name=self.config.name).update(
                    heartbeat_at=DatabaseNow(),
                    jobs_succeeded=self.succeeded,
                    jobs_failed=self.failed,
                    candidates_lost=self.candidates_lost,
                )
                if beat:
                    self.beat_at = sent
                elif not self.stop.is_set():
                    logger.warning(
                        "%s: its row was gone (its lease ran out and its jobs were rescued): "
                        "it starts no other job of its batch",
                        self.config.name,
                    )
                    self.lost = True
                    self._register()
                self._learn_cancels()
            except Error as error:
                if not is_unavailable(error):
                    self.stop.set()  # the worker stops too, rather than run without a lease
                    raise
                logger.warning("%s: heartbeat failed (%s)", self.config.name, error)
            finally:
                close_old_connections()
