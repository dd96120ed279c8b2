"""``manage.py demo``: Kristian Köhntopp's "MySQL: A job queue in Python" (2021) re-enacted
on the jobs table, then the admin to look at it.

Producers insert jobs with random 64-letter payloads ``d`` and ``e``, committing every
ten; consumers claim batches of up to 100 with a claim filter on a random first letter
of ``d``, process them and finish them, printing each batch as the article's run log did."""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import socket
import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count

from django_sqlqueue.management.arguments import positive_int
from testproject.demo.pipeline import QUEUE, consume, produce
from testproject.demo.workers import runworkers_command, workers_running

USERNAME = PASSWORD = "demo"


class Command(BaseCommand):
    help = "Run the demo: producers and consumers on the queue, then the admin to triage it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--jobs", type=positive_int, default=3000, help="Jobs to produce (default 3000).")
        parser.add_argument("--producers", type=positive_int, default=2, help="Producer processes (default 2).")
        parser.add_argument("--consumers", type=positive_int, default=10, help="Consumer processes (default 10).")
        parser.add_argument("--no-serve", action="store_false", dest="serve", help="Do not serve the admin after.")
        parser.add_argument("--port", type=positive_int, default=8000, help="The admin's port (default 8000).")
        parser.add_argument(
            "--no-workers",
            action="store_false",
            dest="workers",
            help="Serve without running manage.py runworkers beside the server (run it yourself).",
        )

    def handle(
        self, *, jobs: int, producers: int, consumers: int, serve: bool, port: int, workers: bool, **options: Any
    ) -> None:
        from django_sqlqueue.models import Job

        call_command("migrate", verbosity=0)
        Job.objects.filter(queue__in=[QUEUE, "triage"]).delete()
        self._race(jobs, producers, consumers)
        self._make_failed_jobs()
        self.stdout.write("status | count")
        for status, count in Job.objects.values_list("status").annotate(count=Count("id")).order_by("status"):
            self.stdout.write(f"{status} | {count}")
        self._make_superuser()
        if serve:
            self._serve(port, workers)

    def _serve(self, port: int, workers: bool) -> None:
        """The admin and the page that enqueues a job, with workers beside them unless
        ``--no-workers``; the port is tried first, as runserver ends the process at once
        (leaving the workers behind) when it cannot bind it."""
        try:
            socket.create_server(("127.0.0.1", port)).close()
        except OSError as error:
            raise CommandError(f"Port {port} is not free ({error.strerror}): pass another with --port.") from None
        with contextlib.ExitStack() as stack:
            if workers:
                process = stack.enter_context(workers_running())
                self.stdout.write(f"Workers: manage.py runworkers (pid {process.pid}), stopped with the demo")
            else:
                self.stdout.write(f"No workers: run them with {runworkers_command()}")
            self.stdout.write(f"The admin: http://127.0.0.1:{port}/admin/  user {USERNAME!r}, password {PASSWORD!r}")
            self.stdout.write(f"The page that enqueues a job: http://127.0.0.1:{port}/")
            self.stdout.flush()  # piped (| tee, a CI log), it would wait until the server stops
            call_command("runserver", f"127.0.0.1:{port}", use_reloader=False)

    def _race(self, jobs: int, producers: int, consumers: int) -> None:
        """The article's run: producers and consumers in processes of their own, their
        batches printed as they go. Its shared counters and log pipe are closed when it
        returns, before the admin is served, so none is left for the interpreter's exit."""
        context = multiprocessing.get_context("spawn")
        producers_done = context.Value("i", 0)
        lost = context.Value("q", 0)
        log = context.Queue()
        shares = [jobs // producers + (1 if n < jobs % producers else 0) for n in range(producers)]
        processes = [context.Process(target=produce, args=(share, producers_done)) for share in shares]
        processes += [
            context.Process(target=consume, args=(n + 1, producers, producers_done, lost, log))
            for n in range(consumers)
        ]
        began = time.monotonic()
        for process in processes:
            process.start()
        next_summary = began + 1.0
        while any(process.is_alive() for process in processes) or not log.empty():
            with contextlib.suppress(queue.Empty):
                self.stdout.write(log.get(timeout=0.1))
            if time.monotonic() >= next_summary:
                self._summary(began, lost.value)
                next_summary += 1.0
        self._summary(began, lost.value)
        for process in processes:
            process.close()
        log.close()
        log.join_thread()

    def _summary(self, began: float, lost: int) -> None:
        from django_sqlqueue.models import Job, JobStatus

        demo = Job.objects.filter(queue=QUEUE)
        enqueued = demo.count()
        done = demo.filter(status=JobStatus.SUCCESSFUL).count()
        depth = demo.filter(status=JobStatus.READY).count()
        rate = done / (time.monotonic() - began)
        self.stdout.write(
            f"summary: enqueued {enqueued}, done {done} ({rate:.0f}/s), queue depth {depth}, "
            f"candidates lost to other consumers {lost}"
        )

    def _make_failed_jobs(self) -> None:
        """A few jobs that fail for good, run by the real worker: something to triage."""
        from django_sqlqueue.models import Job
        from testproject.demo.tasks import fail

        for reason in ("card declined", "mail server unreachable", "<b>HTML</b> in an error stays escaped"):
            Job.objects.enqueue(fail, (reason,), queue="triage", max_attempts=1)
        call_command("runworkers", burst=True, queues=["triage"], processes=1, verbosity=0, stdout=self.stdout)

    def _make_superuser(self) -> None:
        user, _ = get_user_model().objects.get_or_create(
            username=USERNAME, defaults={"is_staff": True, "is_superuser": True}
        )
        user.set_password(PASSWORD)
        user.save()
        self.stdout.write(f"Demo superuser: {USERNAME} / {PASSWORD}")
