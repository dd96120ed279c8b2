"""The ``runworkers`` supervisor: starts worker processes, restarts those that die,
stops jobs that overrun their timeout, and shuts down gracefully on SIGTERM/SIGINT.
The one that holds the maintenance lease ticks the maintenance services
(``django_sqlqueue/maintenance/``): rescue, recurring jobs, rollups and pruning."""

from __future__ import annotations

import contextlib
import datetime
import functools
import logging
import math
import multiprocessing
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_any
from multiprocessing.process import BaseProcess
from typing import Any

from django.conf import settings
from django.db import connections

from django_sqlqueue.conf import conf
from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.pausing import paused_queues
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.db.transient import unless_unavailable
from django_sqlqueue.exceptions import JobCancelled, JobTimeout, WorkerLost
from django_sqlqueue.maintenance.rescue import Rescued, rescue_worker
from django_sqlqueue.maintenance.schedules import sync_settings
from django_sqlqueue.models import Job, Worker
from django_sqlqueue.rules.lifecycle import FAIL, RETRY, SNOOZE, STOP, SUCCEED
from django_sqlqueue.runner import bootstrap
from django_sqlqueue.runner.config import WorkerOptions
from django_sqlqueue.runner.leases import keep_lease, stopped
from django_sqlqueue.runner.maintaining import Maintenance
from django_sqlqueue.runner.naming import holder_name, worker_name
from django_sqlqueue.runner.spawning import main_module_hidden, start_method, stop_signals_held
from django_sqlqueue.runner.started import StartedJobs
from django_sqlqueue.runner.worker import Budget, finished

logger = logging.getLogger(__name__)
#: Who met the database unavailable, as ``unless_unavailable`` logs it.
SUPERVISOR = "the supervisor"

STATUS_SECONDS = 30.0
PROGRESS_SECONDS = 0.25
TICK_SECONDS = 0.1
#: A process that dies young (before it is ready, or before it wrote any job's outcome
#: within :data:`YOUNG_SECONDS` of its start, whatever it died of) is started again
#: after this long, doubling with each young death in a row up to the most: a broken
#: deployment (or disk, or database) is not respawned in a tight loop.
STARTUP_BACKOFF_FIRST = 0.5
STARTUP_BACKOFF_MAX = 30.0
#: A process that lived this long (or wrote an outcome) died of something else than a
#: broken start: it is replaced at once; and once one started after the last young death
#: lives this long (or writes an outcome), the young deaths in a row count from 0 again.
YOUNG_SECONDS = 10.0
#: With ``--burst``, this many young deaths in a row end the run with an error.
STARTUP_ATTEMPTS = 5


@dataclass
class Child:
    """A worker process, and the jobs it has started and not yet recorded."""

    config: WorkerOptions
    process: BaseProcess
    channel: Connection
    started: StartedJobs
    #: When it said each of its jobs was asked to cancel, for ``SQLQUEUE_CANCEL_GRACE``.
    cancelling: dict[int, float] = field(default_factory=dict)
    #: The job it was killed for (past its timeout, or its cancel's grace), and the
    #: error that job's attempt records.
    killed_for: tuple[int, BaseException] | None = None
    #: Whether it got through its start-up (Django, the tasks, its worker row).
    ready: bool = False
    #: When it was started (``time.monotonic()``), and whether it has written an outcome.
    born: float = field(default_factory=time.monotonic)
    proven: bool = False
    #: The exception it said it died of, if it could say.
    died_of: str | None = None
    #: Why it said it exits to make way for a fresh process (``--max-jobs-per-process``,
    #: ``--max-memory``), once it has written its last batch.
    recycled: str | None = None


class Supervisor:
    """Runs until stopped by a signal, or, with ``--burst`` or ``--max-jobs``, until done."""

    def __init__(self, options: WorkerOptions, write: Callable[..., None], progress_bar: bool) -> None:
        self.options = options
        self.write = write
        self.progress_bar = progress_bar
        # Made by the spawn context (a named lock), so that forked and spawned processes can share it.
        shared = multiprocessing.get_context("spawn")
        self.budget = None if options.max_jobs is None else shared.Value("q", options.max_jobs)
        self.children: list[Child] = []
        self.spawned = 0
        self.stop_deadline: float | None = None
        self.exit_now = False
        #: The jobs its processes and its rescues wrote, by the status each got (``READY``:
        #: a failed attempt to retry), as the database took them: the status line's counts.
        self.written: Counter[str] = Counter()
        #: The jobs its rescues gave back (charged an attempt or not).
        self.rescued = 0
        self.total: int | None = None
        #: Processes that died young in a row (:data:`YOUNG_SECONDS`), when the last did,
        #: and when each process waiting to replace one is due.
        self.young_deaths = 0
        self.last_young_death = 0.0
        self.respawns: list[float] = []
        #: Why the run failed, when it did not end as asked (the command's error).
        self.failure: str | None = None
        #: Its name on the maintenance lease; its worker processes' names start with it.
        self.holder = holder_name(options.name_prefix, os.getpid())
        #: The maintenance lease, and what it runs while it holds it.
        self.maintenance = Maintenance(self.holder, self._count, SUPERVISOR)

    def run(self) -> int:
        """Supervise; returns the exit code: 0, or 1 after a second signal or when the
        run failed (``failure`` says why).

        The signal handlers are the caller's again afterwards (``call_command`` from a
        test or a script must not keep ours)."""
        previous = {signum: signal.signal(signum, self._on_signal) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            return self._supervise()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _supervise(self) -> int:
        self._banner()
        if self.progress_bar:
            self.total = Job.objects.ready().in_queues(self.options.queues).count()
        sync_settings()
        for _ in range(self.options.processes):
            self._spawn()
        began = time.monotonic()
        next_status = began + STATUS_SECONDS
        next_progress = began
        self.next_keep = began
        while (self.children or self.respawns) and not self.exit_now:
            self._listen(TICK_SECONDS)
            for child in [child for child in self.children if not child.process.is_alive()]:
                if self.exit_now:  # a second signal: exit now, leave the rescue to the lease
                    break
                self._reap(child)
            now = time.monotonic()
            self._forget_young_deaths(now)
            if due := [at for at in self.respawns if at <= now]:
                self.respawns = [at for at in self.respawns if at > now]
                for _ in due:
                    self._spawn()
            self._enforce_timeouts(now)
            if now >= self.next_keep:
                self._keep_leases(now)
                self.next_keep = now + conf.SQLQUEUE_HEARTBEAT_INTERVAL
            if self.stop_deadline is not None and now > self.stop_deadline:
                self._kill_all("the shutdown grace period (SQLQUEUE_SHUTDOWN_GRACE) ran out")
            if self.stop_deadline is None:
                self.maintenance.tick(now)
            else:
                self.maintenance.step_down()
            if self.progress_bar and now >= next_progress:
                self._draw_progress(now - began)
                next_progress = now + PROGRESS_SECONDS
            elif not self.progress_bar and now >= next_status:
                self._status(now - began)
                next_status = now + STATUS_SECONDS
        self.maintenance.step_down()
        if self.exit_now or self.failure:
            return 1
        if self.progress_bar:
            self._draw_progress(time.monotonic() - began)
            self.write("")
        self._status(time.monotonic() - began)
        return 0

    def _spawn(self) -> None:
        self.spawned += 1
        config = self.options.for_process(worker_name(self.holder, self.spawned))
        method = start_method(conf.SQLQUEUE_WORKER_START)
        context = multiprocessing.get_context("fork") if method == "fork" else multiprocessing.get_context("spawn")
        receiver, sender = context.Pipe(duplex=False)
        started = StartedJobs(context, config.batch_size)
        process = context.Process(
            target=bootstrap.main, args=(config, sender, started, self.budget, method), name=config.name
        )
        if method == "fork":
            # The child must not share the supervisor's sessions: each reconnects when next used.
            connections.close_all()
        with stop_signals_held(), main_module_hidden():
            process.start()
        sender.close()
        self.children.append(Child(config=config, process=process, channel=receiver, started=started))
        logger.info("Started worker %s (pid %s, %s)", config.name, process.pid, method)

    def _listen(self, timeout: float) -> None:
        """Read what the children said: which jobs are done, which to cancel, how they fare."""
        channels = {child.channel: child for child in self.children}
        for ready in wait_for_any([*channels, *(child.process.sentinel for child in self.children)], timeout):
            if ready in channels:
                self._drain(channels[ready])

    def _drain(self, child: Child) -> None:
        try:
            while child.channel.poll():
                kind, *details = child.channel.recv()
                if kind == "cancel":
                    child.cancelling[details[0]] = time.monotonic()
                elif kind == "ready":
                    child.ready = True
                elif kind == "died":
                    (child.died_of,) = details
                elif kind == "recycle":
                    (child.recycled,) = details
                else:
                    child.proven = True
                    job_ids, outcomes = details
                    for job_id in job_ids:
                        child.cancelling.pop(job_id, None)
                    self.written.update(outcomes)
        except (EOFError, OSError):
            pass

    def _reap(self, child: Child) -> None:
        self._drain(child)
        child.process.join()
        _end_group(child.process)
        code = child.process.exitcode
        if self.options.metrics and child.process.pid is not None:
            from django_sqlqueue.metrics.server import process_dead

            process_dead(child.process.pid)
        self.children.remove(child)
        child.channel.close()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"
        if child.died_of:
            how += f" ({child.died_of})"
        if not child.ready:
            self._startup_failed(child, how)
            return
        # Any exit, even status 0 (a task that called sys.exit), while jobs run is a crash.
        crashed = code != 0 or bool(child.started.held())
        if crashed:
            self._rescue(child, how)
        elif child.recycled:
            logger.info("Worker %s %s: replacing it", child.config.name, child.recycled)
        lived = time.monotonic() - child.born
        # The supervisor's own kill for a job's timeout is no sign of a broken worker.
        if crashed and child.killed_for is None and not child.proven and lived < YOUNG_SECONDS:
            self._died_young(child, how, f"{lived:.1f} s after it started")
        elif self._should_replace(crashed or child.recycled is not None):
            self._spawn()

    def _rescue(self, child: Child, how: str) -> None:
        """Give back the jobs of a process that died holding them. Started jobs count a
        failed attempt; but when the supervisor killed it for one job's timeout, only that
        job does, and the others it interrupted go back to ``READY`` uncounted, to run
        again, like the jobs it had not started."""
        lost = WorkerLost(f"worker process {child.config.name} {how} while the job ran")
        held = set(child.started.held())
        started = held
        timeouts: dict[int, BaseException] = {}
        if child.killed_for is not None:
            overran, error = child.killed_for
            timeouts[overran] = error
            started = {overran}
            if interrupted := sorted(held - started):
                logger.warning(
                    "Jobs %s were interrupted by the kill of %s for job %s (%s): they go back "
                    "to the queue, their attempt not counted",
                    interrupted,
                    child.config.name,
                    overran,
                    error,
                )
        rescued = self._count(
            unless_unavailable(
                lambda: rescue_worker(child.config.name, lost, started=started, errors=timeouts),
                Rescued(),
                by=SUPERVISOR,
            )
        )
        # Those given back or charged a retry will run after all: --max-jobs counts the jobs finished.
        Budget(self.budget).give_back_unfinished(rescued.count, rescued.charged)
        unless_unavailable(lambda: Worker.objects.filter(name=child.config.name).delete(), None, by=SUPERVISOR)
        logger.warning("Worker %s %s", child.config.name, how)

    def _count(self, rescued: Rescued) -> Rescued:
        """Add what a rescue wrote to the status line's counts."""
        self.rescued += rescued.count
        self.written.update(rescued.charged)
        return rescued

    def _startup_failed(self, child: Child, how: str) -> None:
        """A process died before it was ready: it held no job."""
        unless_unavailable(lambda: Worker.objects.filter(name=child.config.name).delete(), None, by=SUPERVISOR)
        self._died_young(child, how, "during start-up")

    def _died_young(self, child: Child, how: str, when: str) -> None:
        """A process died young (``when``: during start-up, or how soon after it started):
        start another after a backoff that doubles with each young death in a row; with
        ``--burst``, give up after ``STARTUP_ATTEMPTS`` in a row, naming the last cause."""
        self.young_deaths += 1
        self.last_young_death = time.monotonic()
        then = ""
        if self.options.burst and self.young_deaths >= STARTUP_ATTEMPTS:
            self.failure = f"{self.young_deaths} worker processes in a row died young; the last one {how} {when}."
            self._stop_children()
        elif self._should_replace(unfinished=True):
            # The doublings stop at the most: 2 ** 1024 deaths later would overflow a float.
            doublings = min(self.young_deaths - 1, math.ceil(math.log2(STARTUP_BACKOFF_MAX / STARTUP_BACKOFF_FIRST)))
            backoff = min(STARTUP_BACKOFF_FIRST * 2**doublings, STARTUP_BACKOFF_MAX)
            self.respawns.append(self.last_young_death + backoff)
            then = f": starting another in {backoff:g} s"
        logger.error("Worker %s %s %s (%d in a row)%s", child.config.name, how, when, self.young_deaths, then)

    def _forget_young_deaths(self, now: float) -> None:
        """Count young deaths from 0 again once a process started after the last one has
        written an outcome or lived :data:`YOUNG_SECONDS`: whatever killed them has gone."""
        if self.young_deaths and any(
            child.born > self.last_young_death and (child.proven or now - child.born >= YOUNG_SECONDS)
            for child in self.children
        ):
            logger.info("A worker process started since runs jobs: the young deaths in a row are over")
            self.young_deaths = 0

    def _should_replace(self, unfinished: bool) -> bool:
        """Whether to start a process in place of one that ended; ``unfinished`` when it
        did not end for lack of work (it crashed, or was recycled)."""
        if self.stop_deadline is not None or self.exit_now or self.failure:
            return False
        if self.budget is not None and self.budget.value <= 0:
            return False
        # A burst worker that exits cleanly, holding nothing, found nothing left to do.
        return unfinished or not self.options.burst

    def _enforce_timeouts(self, now: float) -> None:
        """Kill the process of a job past its timeout, or past ``SQLQUEUE_CANCEL_GRACE``
        since its worker learnt it was cancelled: that job's attempt is charged (a
        timeout) or it ends ``CANCELLED``; the others it ran go back to the queue."""
        grace = conf.SQLQUEUE_CANCEL_GRACE
        for child in self.children:
            if child.killed_for is not None:
                continue
            for job_id, started in child.started.stable().items():
                timeout = started.timeout
                if timeout is not None and now - started.began > timeout:
                    logger.warning(
                        "Job %s overran its timeout of %s s: stopping %s", job_id, timeout, child.config.name
                    )
                    error: BaseException = JobTimeout(
                        f"timed out after {timeout:g} s (the job's timeout): its worker process "
                        f"{child.config.name} was killed"
                    )
                elif job_id in child.cancelling and now - child.cancelling[job_id] > grace:
                    logger.warning(
                        "Job %s was cancelled and still ran after %g s (SQLQUEUE_CANCEL_GRACE): stopping %s",
                        job_id,
                        grace,
                        child.config.name,
                    )
                    error = JobCancelled(
                        f"cancelled, and still running after {grace:g} s (SQLQUEUE_CANCEL_GRACE): its worker "
                        f"process {child.config.name} was killed"
                    )
                else:
                    continue
                child.killed_for = (job_id, error)
                _kill_group(child.process)
                break

    def _keep_leases(self, now: float) -> None:
        """Beat for each live process whose own heartbeat is late while it runs jobs
        within their timeouts (a task holding the GIL starves its heartbeat thread; see
        ``leases``). Not for a stopped process, nor for a job past its timeout, which
        :meth:`_enforce_timeouts` handles."""
        for child in self.children:
            pid = child.process.pid
            if child.killed_for is not None or pid is None or not child.process.is_alive() or stopped(pid):
                continue
            running = [
                job_id
                for job_id, started in child.started.held().items()
                if started.running and (started.timeout is None or now - started.began <= started.timeout)
            ]
            if running:
                unless_unavailable(functools.partial(keep_lease, child.config.name, running), False, by=SUPERVISOR)

    def _kill_all(self, why: str) -> None:
        for child in self.children:
            if child.process.is_alive():
                logger.warning("Killing worker %s: %s", child.config.name, why)
                _kill_group(child.process)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.stop_deadline is None:
            self.write(
                f"Stopping: running jobs have {conf.SQLQUEUE_SHUTDOWN_GRACE:g} s to finish "
                "(signal again to exit at once)."
            )
            self._stop_children()
        else:
            self.exit_now = True
            self._kill_all("a second signal asked to exit at once; the lease will rescue their jobs")

    def _stop_children(self) -> None:
        """Ask every process to stop: running jobs get ``SQLQUEUE_SHUTDOWN_GRACE`` to finish."""
        self.stop_deadline = time.monotonic() + conf.SQLQUEUE_SHUTDOWN_GRACE
        self.respawns.clear()
        for child in self.children:
            if child.process.is_alive() and child.process.pid is not None:
                os.kill(child.process.pid, signal.SIGTERM)

    def _banner(self) -> None:
        using = queue_db(Job)
        # The worker processes', and this one's.
        connections_needed = self.options.processes * engine_for(using).worker_connections(self.options.threads) + 1
        queues = ", ".join(self.options.queues) if self.options.queues else "all queues"
        mode = " (burst: until the queue is empty)" if self.options.burst else ""
        limit = f", at most {self.options.max_jobs} jobs" if self.options.max_jobs is not None else ""
        recycling = [
            f"{value}{unit}"
            for value, unit in ((self.options.max_jobs_per_process, " jobs"), (self.options.max_memory, " MiB"))
            if value is not None
        ]
        if recycling:
            limit += f", each process replaced after {' or '.join(recycling)}"
        self.write(
            f"runworkers: {self.options.processes} process(es) x {self.options.threads} thread(s) on {queues}, "
            f"batches of {self.options.batch_size}{limit}{mode}; database {engine_for(using).label}, "
            f"up to {connections_needed} connections"
        )
        if settings.DEBUG:
            logger.warning(
                "DEBUG is on: Django keeps a copy of every query the workers run, which slows them down. "
                "Run workers with DEBUG = False."
            )

    def _finished(self) -> int:
        """The jobs its processes and rescues ended (``SUCCESSFUL``, ``FAILED``, ``CANCELLED``)."""
        return finished(self.written)

    def _status(self, elapsed: float) -> None:
        """Counts in jobs, by the status written, as ``sqlqueue_stats`` counts them; and
        the attempts that went back to ``READY``: failed ones to be retried, and snoozes."""
        ready = unless_unavailable(
            lambda: Job.objects.ready().in_queues(self.options.queues).count(), "?", by=SUPERVISOR
        )
        paused = unless_unavailable(lambda: sorted(paused_queues()), [], by=SUPERVISOR)
        rate = self._finished() / elapsed if elapsed else 0.0
        written = self.written
        self.write(
            f"{datetime.datetime.now():%H:%M:%S} jobs succeeded {written[SUCCEED.outcome]}, "
            f"failed {written[FAIL.outcome]}, cancelled {written[STOP.outcome]} ({rate:.0f}/s); "
            f"failed attempts to retry {written[RETRY.outcome]}, snoozed {written[SNOOZE.outcome]}; "
            f"jobs rescued {self.rescued}, ready {ready}; "
            f"processes {len(self.children)}" + (f"; paused {', '.join(paused)}" if paused else "")
        )

    def _draw_progress(self, elapsed: float) -> None:
        done = self._finished()
        total = max(self.total or 0, done) or 1
        width = 30
        filled = width * done // total
        rate = done / elapsed if elapsed else 0.0
        self.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} jobs, {rate:.0f}/s ", ending="")


def _kill_group(process: BaseProcess) -> None:
    """SIGKILL a worker process and whatever its tasks started (its process group)."""
    _end_group(process)
    process.kill()  # it may have died before it made its group


def _end_group(process: BaseProcess) -> None:
    """SIGKILL what is left of a worker's process group: the children its tasks started
    and left behind, which would otherwise outlive it. Nothing when there are none."""
    if process.pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
