"""``manage.py sqlqueue_prune``: delete finished jobs past their retention now, for sites
without a ``runworkers`` supervisor (which prunes by itself) and for one-off clean-ups."""

from __future__ import annotations

import datetime
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import Error

from django_sqlqueue.conf import conf
from django_sqlqueue.db import pruning
from django_sqlqueue.management.arguments import duration, finished_statuses, percent, positive_int
from django_sqlqueue.management.base import QueueCommand
from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import JobStatus


class Command(QueueCommand):
    help = (
        "Delete finished jobs (SUCCESSFUL, FAILED, CANCELLED) older than SQLQUEUE_RETENTION says, or than "
        "--older-than, by primary key in short transactions; READY and RUNNING jobs are never touched."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Count the jobs that would be deleted; delete nothing."
        )
        parser.add_argument(
            "--status",
            type=finished_statuses,
            action="extend",
            dest="statuses",
            metavar="STATUS",
            help="Only jobs of these statuses (repeat, or separate with commas; default: all three).",
        )
        parser.add_argument(
            "--older-than",
            type=duration,
            default=None,
            metavar="DURATION",
            help="Jobs that finished longer ago than this (seconds, or 30m, 12h, 7d, 2w), whatever "
            "SQLQUEUE_RETENTION says (default: SQLQUEUE_RETENTION, per status).",
        )
        parser.add_argument(
            "--batch-size",
            type=positive_int,
            default=pruning.BATCH_SIZE,
            help=f"Jobs deleted per transaction (default {pruning.BATCH_SIZE}).",
        )
        parser.add_argument(
            "--duty-cycle",
            type=percent,
            default=round(pruning.DUTY_CYCLE * 100),
            metavar="PERCENT",
            help=f"The share of the time spent deleting: after each chunk it rests so that workers beside it "
            f"keep the database (default {pruning.DUTY_CYCLE:.0%}; 100 deletes flat out).",
        )

    def handle(
        self,
        *,
        dry_run: bool,
        statuses: list[JobStatus] | None,
        older_than: datetime.timedelta | None,
        batch_size: int,
        duty_cycle: int,
        **options: Any,
    ) -> None:
        retention = {
            status: kept if older_than is None else older_than
            for status, kept in conf.SQLQUEUE_RETENTION.items()
            if statuses is None or status in statuses
        }
        jobs = Job.objects.on_queue_db()
        forever = [str(status) for status, kept in retention.items() if kept is None]
        try:
            if dry_run:
                counted = pruning.count(jobs, retention)
                self._summary("Would delete", counted, retention, forever)
                return
            pruned = pruning.prune(
                jobs,
                retention,
                batch_size=batch_size,
                on_chunk=self._progress(jobs, retention),
                duty_cycle=duty_cycle / 100,
            )
        except Error as error:
            raise CommandError(
                f"Pruning stopped: {error}. What was deleted before stays deleted; run the command again to go on."
            ) from error
        if self.stdout.isatty():
            self.stdout.write("")
        self._summary("Deleted", pruned.deleted, retention, forever)

    def _progress(self, jobs: Any, retention: pruning.Retention) -> Any:
        """A progress bar on a terminal: the total is counted first, which costs a scan
        of the index, so not when the output goes to a log."""
        if not self.stdout.isatty():
            return None
        total = max(sum(pruning.count(jobs, retention).values()), 1)
        done = 0

        def draw(status: JobStatus, deleted: int) -> None:
            nonlocal done
            done += deleted
            filled = 30 * min(done, total) // total
            self.stdout.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} jobs", ending="")

        return draw

    def _summary(
        self, verb: str, counts: dict[JobStatus, int], retention: pruning.Retention, forever: list[str]
    ) -> None:
        parts = [
            f"{counts.get(status, 0)} {status} (finished over {_age(kept)} ago)"
            for status, kept in pruning.retention_periods(retention).items()
        ]
        line = f"{verb} {sum(counts.values())} job(s)"
        if parts:
            line += f": {', '.join(parts)}"
        if forever:
            line += f"; {' and '.join(forever)} kept for ever (SQLQUEUE_RETENTION)"
        self.stdout.write(f"{line}.")


def _age(kept: datetime.timedelta) -> str:
    """``7d``, ``12h``, ``30m``, or seconds when it is no whole number of those."""
    seconds = kept.total_seconds()
    for unit, size in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"
