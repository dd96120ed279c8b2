"""``manage.py sqlqueue_health``: exit status 0 when the queue works, 1 with one line per
problem when it does not; for container probes and monitoring."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from django_sqlqueue.management.arguments import non_negative_int, positive_number
from django_sqlqueue.management.base import QueueCommand
from django_sqlqueue.reporting.health import health


class Command(QueueCommand):
    help = (
        "Exit 0 if the database that holds the jobs answers, the queue's migrations are applied, enough "
        "worker processes are alive and no queue lags past --max-lag; else exit 1 naming each problem."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--min-workers",
            type=non_negative_int,
            default=1,
            help="Worker processes that must be alive, on any machine (default 1; 0 does not ask).",
        )
        parser.add_argument(
            "--max-lag",
            type=positive_number,
            default=None,
            metavar="SECONDS",
            help="The longest a queue's oldest due job may have waited (default: not asked).",
        )

    def handle(self, *, min_workers: int, max_lag: float | None, **options: Any) -> None:
        found = health(min_workers=min_workers, max_lag=max_lag)
        if found.problems:
            raise CommandError("\n".join(found.problems), returncode=1)
        oldest = max((lag.total_seconds() for lag in found.lags.values()), default=0.0)
        self.stdout.write(
            f"OK: {found.workers_alive} worker process(es) alive; the oldest due job has waited {oldest:.0f} s."
        )
