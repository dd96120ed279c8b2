"""The batches' sweep (``db/batches.py``): completing the batches whose last jobs
ended without a finish counting them down (cancelled, expired, rescued out of
attempts, cancelled by a workflow, deleted), so that no batch stays open forever."""

from __future__ import annotations

import logging

from django.db import Error, close_old_connections

from django_sqlqueue.db import batches
from django_sqlqueue.maintenance.service import Service
from django_sqlqueue.models import Job

logger = logging.getLogger(__name__)

#: The sweep runs this often while it finds nothing to complete.
SWEEP_SECONDS = 5.0
#: And this often while a backlog lasts.
SWEEP_BACKLOG_SECONDS = 0.5


class BatchesService(Service):
    """Completes up to ``batches.SWEEP_LIMIT`` open batches without unfinished jobs, a
    turn. Completing is compare-and-set under the batch's row lock, so a sweep racing
    a finish enqueues the callbacks once. A failure is logged and tried again next turn."""

    name = "batches"
    interval = SWEEP_SECONDS

    def run(self, now: float) -> float:
        try:
            completed = batches.sweep(Job, Job.objects.on_queue_db().db)
        except Error as error:
            logger.warning("Sweeping batches failed (%s); trying again in %g s", error, self.interval)
            return self.interval
        finally:
            close_old_connections()
        if completed:
            logger.info("Completed %d batches whose jobs had all ended", completed)
        return SWEEP_BACKLOG_SECONDS if completed == batches.SWEEP_LIMIT else self.interval
