"""Where a worker process starts: Django is set up before anything that needs models.

The supervisor forks its processes from itself where that is safe, and spawns them (a
fresh interpreter) otherwise (``spawning``). A spawned child imports the module of its
target, and unpickles its arguments, before it calls the target: so the target lives
here and its arguments in ``config`` and ``started``, modules that import only the
standard library and Django (as ``logs`` does). Every other runtime module may then
import models at the top."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from multiprocessing.connection import Connection
from typing import Any

import django
from django.db import connections

from django_sqlqueue.logs import configure_logging
from django_sqlqueue.runner.config import WorkerOptions
from django_sqlqueue.runner.pooling import without_pool
from django_sqlqueue.runner.spawning import STOP_SIGNALS
from django_sqlqueue.runner.started import StartedJobs


def main(config: WorkerOptions, channel: Connection, started: StartedJobs, budget: Any, method: str = "spawn") -> None:
    """The worker process's entry point: set Django up (a forked process has it set up
    already), then run the worker until it is told to stop (SIGTERM, SIGINT), runs out
    of work (``--burst``) or of budget.

    What kills it is told to the supervisor first, which logs it with the exit.

    It leads a process group of its own, which whatever its tasks start joins: the
    supervisor ends the group with the process (a timeout, a crash, a recycle, the end
    of the run), so a task's child is never left running on its own. The terminal's
    Ctrl-C reaches the supervisor's group only; the supervisor passes it on.

    The supervisor starts it with SIGTERM and SIGINT held back (``spawning``): they are
    let through once its own handlers replace those a forked process inherits. A forked
    process runs at its end the ``atexit`` functions registered in it, not those the
    supervisor registered before the fork, as a spawned one does."""
    if method == "fork":
        # Those of the supervisor are not this process's to run (Python 3.13 clears them too).
        atexit._clear()
    os.setpgid(0, 0)
    stop = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        stop.set()

    for signum in STOP_SIGNALS:
        signal.signal(signum, request_stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    try:
        if method == "spawn":
            django.setup()
        own_connections()
        # Only now: the worker imports models.
        from django_sqlqueue.runner.worker import Budget, WorkerProcess

        configure_logging(config.log_format, config.log_level)
        if config.metrics:
            from django_sqlqueue.metrics.recorder import connect

            connect()
        WorkerProcess(config, channel, started, Budget(budget), stop).run()
    except BaseException as error:
        with contextlib.suppress(OSError):
            channel.send(("died", f"{type(error).__name__}: {error}"))
        raise
    finally:
        if method == "fork":
            # A forked process ends with os._exit(), skipping what the interpreter runs at
            # exit (before Python 3.13): what this process registered, as exporters do.
            atexit._run_exitfuncs()


def own_connections() -> None:
    """Keep this process's database connections open for its whole life, whatever
    ``CONN_MAX_AGE`` says, and check each before its first use after a job or a batch.

    ``CONN_MAX_AGE`` is a web setting, left at Django's default 0 by most projects,
    which would make the worker connect anew for every claim, every finish and every
    job that queries. A worker lives for hours, so it owns its connections instead:
    ``close_old_connections()`` (between batches, after each job) then closes only those
    that errors left unusable, and the health check (a ping before the first query of
    the next round) replaces a connection the server dropped while the worker was idle.
    Set here, before any connection exists, for this process only: every thread's
    connection reads these settings when it connects; without Django's connection pool,
    which Django refuses beside connections kept open."""
    without_pool()
    for alias in connections:
        connections.settings[alias].update(CONN_MAX_AGE=None, CONN_HEALTH_CHECKS=True)
