"""Recurring jobs (``SQLQUEUE_SCHEDULE``): every supervisor writes the settings to their
rows as it starts, and the lease's holder enqueues the due ticks every second."""

from __future__ import annotations

import logging

from django_sqlqueue.conf import conf
from django_sqlqueue.db import recurrence
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.db.transient import unless_unavailable
from django_sqlqueue.maintenance.service import Service
from django_sqlqueue.models import Schedule

logger = logging.getLogger(__name__)

#: Due recurring jobs are looked for this often.
SCHEDULE_SECONDS = 1.0


def sync_settings() -> None:
    """Write ``SQLQUEUE_SCHEDULE`` to its rows before the first tick (every supervisor
    does, at start-up, leader or not: the rows follow the settings last deployed)."""
    entries = conf.SQLQUEUE_SCHEDULE
    unless_unavailable(lambda: recurrence.sync(entries, queue_db(Schedule)), None, by="the recurring jobs")
    if entries:
        logger.info("Recurring jobs: %s", ", ".join(entries))


class SchedulesService(Service):
    """Enqueues the due ticks of the recurring jobs every :data:`SCHEDULE_SECONDS`. A
    tick fires once, by its own compare-and-set, whoever else ticks it."""

    name = "schedules"
    interval = SCHEDULE_SECONDS

    def __init__(self) -> None:
        super().__init__()
        #: The recurring jobs' problems it has logged (each once, not every second).
        self.problems: set[tuple[str, str]] = set()

    def run(self, now: float) -> float:
        unless_unavailable(lambda: recurrence.tick(queue_db(Schedule), self.problems), 0, by="the recurring jobs")
        return self.interval
