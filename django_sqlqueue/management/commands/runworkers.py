"""``manage.py runworkers``: parse and check the options, then hand over to the supervisor."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import CommandError, CommandParser
from django.db import models

from django_sqlqueue.conf import conf
from django_sqlqueue.db import charsets
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.exceptions import TaskModuleError
from django_sqlqueue.logs import LOG_FORMATS, TEXT, configure_logging, logging_restored
from django_sqlqueue.management.arguments import claim_limit, name_prefix, positive_int, queue_list, tcp_port
from django_sqlqueue.management.base import QueueCommand
from django_sqlqueue.metrics import INSTALL_HINT, client_installed
from django_sqlqueue.models import Job, Leader, Worker
from django_sqlqueue.rules.queues import unlisted_queues_problem
from django_sqlqueue.rules.registry import autodiscover
from django_sqlqueue.runner.capacity import connections_problem
from django_sqlqueue.runner.config import WorkerOptions
from django_sqlqueue.runner.supervisor import Supervisor

_LOG_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}


class Command(QueueCommand):
    help = "Run jobs from the queue table: a supervisor and its worker processes."

    def run_from_argv(self, argv: list[str]) -> None:
        """Run as ``manage.py runworkers``, then end the process without the interpreter's
        teardown: its worker processes are reaped and its connections closed by then, and
        collecting the objects of every module Django imported would make a ``--burst``
        run (a deploy's step, a cron job) end about a tenth of a second later. The
        ``atexit`` functions still run first, so that logs and exporters flush. A run that
        failed (``CommandError``) exits as Django's commands do. ``call_command`` never
        comes here: its caller's process goes on."""
        super().run_from_argv(argv)
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--queues", type=queue_list, default=None, help="Comma-separated queues to run (default: all)."
        )
        parser.add_argument(
            "--processes",
            type=positive_int,
            default=os.cpu_count() or 1,
            help="Worker processes (default: one per CPU).",
        )
        parser.add_argument("--threads", type=positive_int, default=1, help="Threads per process (default 1).")
        parser.add_argument(
            "--batch-size",
            type=claim_limit,
            default=None,
            help="Most jobs one claim takes (default: SQLQUEUE_BATCH_SIZE).",
        )
        parser.add_argument("--burst", action="store_true", help="Run what is ready now, then exit 0.")
        parser.add_argument(
            "--max-jobs",
            type=positive_int,
            default=None,
            help=(
                "Exit once this many jobs have finished (SUCCESSFUL, FAILED or CANCELLED), all processes "
                "together. A failed attempt to retry, a snooze, and a job a crashed process held that will "
                "run again do not count."
            ),
        )
        parser.add_argument(
            "--max-jobs-per-process",
            type=positive_int,
            default=None,
            help="Replace a worker process once it has run this many jobs (default: never).",
        )
        parser.add_argument(
            "--max-memory",
            type=positive_int,
            default=None,
            metavar="MIB",
            help="Replace a worker process once its resident memory passes this many MiB (default: never).",
        )
        parser.add_argument(
            "--name",
            type=name_prefix,
            default="",
            help="A prefix for the worker names, e.g. the deployment (at most about 200 characters, "
            "by the host's name).",
        )
        parser.add_argument(
            "--metrics-port",
            type=tcp_port,
            default=None,
            help="Serve Prometheus metrics on this port from the supervisor (needs the [metrics] extra).",
        )
        parser.add_argument(
            "--metrics-address",
            default="127.0.0.1",
            help="The address --metrics-port binds (default 127.0.0.1; 0.0.0.0 for every interface).",
        )
        parser.add_argument(
            "--log-format",
            choices=LOG_FORMATS,
            default=TEXT,
            help="text (your LOGGING as it is) or json (one JSON object per line on stderr).",
        )

    def handle(
        self,
        *,
        queues: list[str] | None,
        processes: int,
        threads: int,
        batch_size: int | None,
        burst: bool,
        max_jobs: int | None,
        max_jobs_per_process: int | None,
        max_memory: int | None,
        name: str,
        metrics_port: int | None,
        metrics_address: str,
        log_format: str,
        verbosity: int,
        **options: Any,
    ) -> None:
        if problem := unlisted_queues_problem(queues or [], conf.SQLQUEUE_QUEUES):
            raise CommandError(f"--queues: {problem}.")
        if problem := _unstorable_name(queues or [], name):
            raise CommandError(problem)
        try:
            # Here, not in each process: a broken tasks module stops the start, named.
            autodiscover()
        except TaskModuleError as error:
            raise CommandError(
                f"{error}. No worker could run its tasks: fix it, then start runworkers again."
            ) from error
        try:
            # Here too: every worker process would die at start-up on it, and be started again.
            conf.SQLQUEUE_MIDDLEWARE  # noqa: B018  # read to import each one
        except ImproperlyConfigured as error:
            raise CommandError(f"{error} No worker could start: fix it, then start runworkers again.") from error
        batch_size = batch_size or conf.SQLQUEUE_BATCH_SIZE
        if threads > batch_size:
            # A process runs one batch at a time, and its started-jobs slots hold one batch.
            self.stderr.write(
                f"--threads {threads} is more than the batch size ({batch_size}): a process runs one batch "
                f"at a time, so each runs {batch_size} thread(s)."
            )
            threads = batch_size
        # With the threads each process will run, not those asked for.
        if problem := connections_problem(processes, threads):
            raise CommandError(problem)
        if metrics_port is not None and not client_installed():
            raise CommandError(f"--metrics-port needs prometheus-client: {INSTALL_HINT}.")
        level = _LOG_LEVELS.get(verbosity, logging.DEBUG)
        supervisor = Supervisor(
            WorkerOptions(
                queues=queues,
                processes=processes,
                threads=threads,
                batch_size=batch_size,
                burst=burst,
                max_jobs=max_jobs,
                name_prefix=name,
                log_level=level,
                max_jobs_per_process=max_jobs_per_process,
                max_memory=max_memory,
                metrics=client_installed() and (metrics_port is not None or "PROMETHEUS_MULTIPROC_DIR" in os.environ),
                log_format=log_format,
            ),
            write=self._write,
            progress_bar=burst and self.stdout.isatty(),
        )
        with logging_restored():
            configure_logging(log_format, level)
            with _metrics_served(metrics_address, metrics_port):
                code = supervisor.run()
        if code:
            raise CommandError(
                supervisor.failure or "Exited at once on a second signal; the jobs it held will be rescued.",
                returncode=code,
            )

    def _write(self, text: str, ending: str = "\n") -> None:
        self.stdout.write(text, ending=ending)
        self.stdout.flush()
        sys.stdout.flush()


def _unstorable_name(queues: list[str], prefix: str) -> str | None:
    """Why a ``--queues`` name or the ``--name`` prefix is text the database cannot
    store or compare as itself (a character outside a MySQL table's or connection's
    character set), or None. Unrefused, every worker died at start-up on the raw error
    of its first claim or its registration, and was started again."""
    texts: list[tuple[str, type[models.Model], str, str]] = [("--queues", Job, "queue", queue) for queue in queues]
    texts += [
        ("--name", model, column, prefix) for model, column in ((Job, "worker"), (Worker, "name"), (Leader, "holder"))
    ]
    for option, model, column, text in texts:
        if problem := charsets.unstorable(model, queue_db(model), {column: text}):
            return f"{option}: {problem}."
    return None


@contextlib.contextmanager
def _metrics_served(address: str, port: int | None) -> Iterator[None]:
    """Serve the metrics on ``address:port`` while the block runs (nothing without a port)."""
    if port is None:
        yield
        return
    from django_sqlqueue.metrics.server import serving

    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(serving(address, port))
        except OSError as error:
            raise CommandError(
                f"--metrics-port cannot serve on {address}:{port}: {error.strerror or error}."
            ) from error
        yield
