"""Embedded workers: with ``SQLQUEUE_EMBEDDED`` set, each web process runs a worker of
its own on threads (the loop of ``worker.py``, as ``runworkers``' processes run it, with
the same claims, heartbeats, fences and leases) and competes for the maintenance lease
(``maintaining.py``), so that a site of web processes alone rescues the jobs of one that
died, runs its recurring jobs and prunes.

They start on a process's first request (Django's ``request_started``): only a process
that serves requests runs them, never ``migrate`` or another management command, nor the
runserver autoreloader's watching parent (its child serves, and runs them). Not under
the tests either (Django's test environment is set up: ``django.core.mail.outbox``
exists), whose requests come from the test client. Starting on the first request rather
than in ``AppConfig.ready()`` also keeps them out of a preforking server's parent, which
loads the project before it forks (gunicorn's ``--preload``): threads do not survive a
fork, and a forked child forgets the parent's workers (``os.register_at_fork``) and
starts its own on its own first request.

They stop as the interpreter exits (gunicorn's SIGTERM, runserver's reload), before it
waits for the job threads: the worker claims no more, lets its running jobs finish within
``SQLQUEUE_SHUTDOWN_GRACE``, writes their outcomes, unregisters and gives up the lease.
A process killed outright leaves its row to expire: whoever holds the maintenance lease
(another web process, or a ``runworkers`` supervisor) rescues its jobs after
``SQLQUEUE_LEASE``."""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time

from django.core import mail
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import request_started
from django.db import close_old_connections, connections

from django_sqlqueue.conf import conf
from django_sqlqueue.maintenance.schedules import sync_settings
from django_sqlqueue.rules.embedded import EMBEDDED_PREFIX, Embedded
from django_sqlqueue.runner.config import WorkerOptions
from django_sqlqueue.runner.maintaining import Maintenance
from django_sqlqueue.runner.naming import holder_name, worker_name
from django_sqlqueue.runner.started import StartedJobs
from django_sqlqueue.runner.worker import Budget, WorkerProcess

logger = logging.getLogger(__name__)

#: How often the maintenance thread renews or tries the lease and ticks its services.
MAINTENANCE_TICK_SECONDS = 0.5
#: Who met the database unavailable, as ``unless_unavailable`` logs it.
BY = "the embedded workers"


class EmbeddedWorkers:
    """The embedded worker of one web process, on a thread of its own with its job
    threads and its heartbeat, and the maintenance on another thread."""

    def __init__(self, options: Embedded) -> None:
        self.pid = os.getpid()
        holder = holder_name(EMBEDDED_PREFIX, self.pid)
        self.config = WorkerOptions(
            queues=None if options.queues is None else list(options.queues),
            threads=options.threads,
            batch_size=max(options.threads, conf.SQLQUEUE_BATCH_SIZE),
            burst=False,
            log_level=logging.INFO,
            name=worker_name(holder, 1),
        )
        self.stopping = threading.Event()
        started = StartedJobs(multiprocessing.get_context(), self.config.batch_size)
        self.worker = WorkerProcess(self.config, None, started, Budget(None), self.stopping)
        self.maintenance = Maintenance(holder, counted=lambda rescued: None, by=BY)
        self.threads = [
            threading.Thread(target=self._work, name="sqlqueue-embedded", daemon=True),
            threading.Thread(target=self._maintain, name="sqlqueue-embedded-maintenance", daemon=True),
        ]

    @property
    def name(self) -> str:
        """The worker's name: its ``Worker`` row's, and its jobs' ``worker``."""
        return self.config.name

    def start(self) -> None:
        # Run by threading's own exit hooks, before the interpreter waits for the job
        # threads (``concurrent.futures`` registers there too, earlier, so it runs after).
        threading._register_atexit(self.stop)  # type: ignore[attr-defined]
        for thread in self.threads:
            thread.start()
        logger.info("%s: started on %d thread(s)", self.name, self.config.threads)

    def stop(self) -> None:
        """Stop claiming; give the running jobs ``SQLQUEUE_SHUTDOWN_GRACE`` to finish and
        their outcomes to be written; unregister and give the lease up. Jobs still running
        then are left to the rescue, after ``SQLQUEUE_LEASE``. Nothing in a forked child,
        where these threads do not exist."""
        if os.getpid() != self.pid or self.stopping.is_set():
            return
        self.stopping.set()
        deadline = time.monotonic() + conf.SQLQUEUE_SHUTDOWN_GRACE
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in self.threads):
            logger.warning(
                "%s: jobs still ran after SQLQUEUE_SHUTDOWN_GRACE; the process exits, and they are rescued "
                "after SQLQUEUE_LEASE",
                self.name,
            )
        else:
            logger.info("%s: stopped", self.name)

    def _work(self) -> None:
        try:
            self.worker.run()
        except Exception:
            logger.exception("%s: the embedded worker stopped on an error; this process runs no more jobs", self.name)
        finally:
            connections.close_all()

    def _maintain(self) -> None:
        try:
            sync_settings()
            while True:
                self.maintenance.tick(time.monotonic())
                close_old_connections()
                if self.stopping.wait(MAINTENANCE_TICK_SECONDS):
                    break
        except Exception:
            logger.exception("%s: the maintenance stopped on an error", self.name)
        finally:
            self.maintenance.step_down()
            connections.close_all()


class _Process:
    """This process's embedded workers: whether it decided to run them, and them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.decided = False
        self.workers: EmbeddedWorkers | None = None


_process = _Process()


def install() -> None:
    """Start the embedded workers on each process's first request, and forget them in a
    forked child. Called by ``AppConfig.ready()``, once per process."""
    request_started.connect(_on_request, dispatch_uid="django_sqlqueue.embedded")
    os.register_at_fork(after_in_child=_forget)


def _forget() -> None:
    """In a forked child: no thread of the parent's runs here, and its lock may have
    been held at the fork."""
    global _process
    _process = _Process()


def _on_request(sender: object, **kwargs: object) -> None:
    if not _process.decided:
        start()


def running_tests() -> bool:
    """Whether Django's test environment is set up (``manage.py test``, pytest-django)."""
    return hasattr(mail, "outbox")


def start() -> EmbeddedWorkers | None:
    """This process's embedded workers, started now unless already decided: None when
    ``SQLQUEUE_EMBEDDED`` is None or invalid (logged; ``sqlqueue.E044`` reports it too),
    or under the tests."""
    with _process.lock:
        if not _process.decided:
            _process.decided = True
            if running_tests():
                return None
            try:
                options = conf.SQLQUEUE_EMBEDDED
            except ImproperlyConfigured as error:
                logger.error("No embedded workers: %s", error)
                return None
            if options is not None:
                _process.workers = EmbeddedWorkers(options)
                _process.workers.start()
        return _process.workers


def stop() -> None:
    """Stop this process's embedded workers now (as at exit); the next request does not
    start them again."""
    with _process.lock:
        _process.decided = True
        workers = _process.workers
    if workers is not None:
        workers.stop()
