"""``manage.py sqlqueue_stats``: per queue its jobs by status, lag and recent outcomes,
and the live workers with their counters, as tables for people or JSON for machines;
``--watch`` redraws them in place like ``top``."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import DatabaseError, connections

from django_sqlqueue.db.migrated import does_not_answer
from django_sqlqueue.db.routing import read_db
from django_sqlqueue.management.arguments import positive_number
from django_sqlqueue.management.base import QueueCommand
from django_sqlqueue.models import Job
from django_sqlqueue.reporting.stats import Snapshot, snapshot, whole_seconds
from django_sqlqueue.rules.lifecycle import JobStatus

#: Move the cursor home and clear the screen: how a terminal redraws in place.
CLEAR_SCREEN = "\033[H\033[2J"
WATCH_SECONDS = 2.0

QUEUE_HEADERS = [*JobStatus.values, "LAG", "DONE/1M", "FAILED/1M", "DONE/1H", "FAILED/1H", "EXPIRED/1H", "PAUSED"]
WORKER_HEADERS = ["NAME", "HOST", "PID", "QUEUES", "SUCCEEDED", "FAILED", "LOST", "HEARTBEAT"]
TEXT_COLUMNS = {"QUEUE", "NAME", "HOST", "QUEUES", "PAUSED"}


class Command(QueueCommand):
    help = (
        "Show each queue's jobs by status, the lag of its oldest due job and the jobs finished and failed "
        "in the last minute and hour, and the live workers with their counters."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object (one a line with --watch).")
        parser.add_argument(
            "--watch",
            type=positive_number,
            nargs="?",
            const=WATCH_SECONDS,
            default=None,
            metavar="SECONDS",
            help=f"Redraw every SECONDS (default {WATCH_SECONDS:g}) until Ctrl-C.",
        )
        parser.add_argument(
            "--database",
            choices=tuple(connections),
            default=None,
            help="Read on this database (default: where the router sends the jobs table's reads, a replica perhaps).",
        )

    def handle(self, *, json: bool, watch: float | None, database: str | None, **options: Any) -> None:
        alias = database or read_db(Job)
        draw = as_json if json else as_tables
        if watch is None:
            self.stdout.write(draw(read(alias)))
            return
        # A terminal is redrawn in place; a file or pipe gets every frame, a blank line apart.
        redraw = self.stdout.isatty() and not json
        try:
            while True:
                frame = draw(read(alias))
                self.stdout.write(CLEAR_SCREEN + frame if redraw else frame + ("" if json else "\n\n"))
                self.stdout.flush()
                time.sleep(watch)
        except KeyboardInterrupt:
            return


def read(alias: str) -> Snapshot:
    """The figures, or the one line that says why they cannot be read."""
    try:
        return snapshot(alias)
    except DatabaseError as error:  # gone since the question above
        raise CommandError(does_not_answer(alias, error), returncode=1) from None


def as_json(figures: Snapshot) -> str:
    return json.dumps(figures.as_json(), sort_keys=True)


def as_tables(figures: Snapshot) -> str:
    """The queues' table and the workers' table, under the database's time."""
    queues = [
        [
            queue.queue,
            *(
                ("~" if status in queue.estimated else "") + str(queue.counts.get(status, 0))
                for status in JobStatus.values
            ),
            "-" if queue.lag is None else whole_seconds(queue.lag),
            str(queue.recent.finished_last_minute),
            str(queue.recent.failed_last_minute),
            str(queue.recent.finished_last_hour),
            str(queue.recent.failed_last_hour),
            str(queue.recent.expired_last_hour),
            ("paused" + (f": {queue.paused_reason}" if queue.paused_reason else "")) if queue.paused else "",
        ]
        for queue in figures.queues
    ]
    workers = [
        [
            worker.name,
            worker.host,
            str(worker.pid),
            ",".join(worker.queues) if worker.queues else "(all)",
            str(worker.jobs_succeeded),
            str(worker.jobs_failed),
            str(worker.candidates_lost),
            f"{worker.heartbeat_age.total_seconds():.1f}s ago",
        ]
        for worker in figures.workers
    ]
    lost = sum(worker.candidates_lost for worker in figures.workers)
    return "\n".join(
        [
            f"sqlqueue at {figures.now:%Y-%m-%d %H:%M:%S %Z} (the database's clock)",
            "",
            *(table(["QUEUE", *QUEUE_HEADERS], queues) if queues else ["No jobs."]),
            "",
            f"{len(workers)} live worker(s); candidates lost to other workers: {lost}",
            *(table(WORKER_HEADERS, workers) if workers else []),
        ]
    )


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Fixed columns as wide as their widest cell: words left-aligned, figures right."""
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    return [
        "  ".join(
            cell.ljust(width) if header in TEXT_COLUMNS else cell.rjust(width)
            for header, cell, width in zip(headers, line, widths, strict=True)
        ).rstrip()
        for line in [headers, *rows]
    ]
