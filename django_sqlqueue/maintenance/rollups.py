"""Counting the closed hours of finished jobs for the admin's 7-day chart
(``db/rollup.py``), a day's worth a turn: every minute, or every second while hours are
left to count (a first start, or a leader back after a long outage)."""

from __future__ import annotations

import logging

from django.db import Error, close_old_connections

from django_sqlqueue.db import rollup
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.maintenance.service import Service
from django_sqlqueue.models import FinishedHour

logger = logging.getLogger(__name__)

#: Hours are looked for this often once every closed hour is counted.
ROLLUP_SECONDS = 60.0
#: And this often while some are left.
ROLLUP_BACKLOG_SECONDS = 1.0


class RollupsService(Service):
    """Counts up to ``rollup.BATCH_HOURS`` closed hours a turn, and deletes the counted
    hours past ``rollup.KEEP``. Pruning counts again before it deletes (one read when
    this has counted), so it never deletes a job of an hour not counted, whoever prunes.
    A failure is logged and tried again at the next interval."""

    name = "rollups"
    interval = ROLLUP_SECONDS

    def run(self, now: float) -> float:
        using = queue_db(FinishedHour)
        try:
            hours = rollup.catch_up(using, batches=1)
            rollup.forget(using)
        except Error as error:
            logger.warning(
                "Counting the hours of finished jobs failed (%s); trying again in %g s", error, self.interval
            )
            return self.interval
        finally:
            close_old_connections()
        return ROLLUP_BACKLOG_SECONDS if hours.missing else self.interval
