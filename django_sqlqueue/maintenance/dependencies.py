"""The workflows' sweep (``db/dependencies.py``): settling what waits for jobs that
finished without settling it (a worker killed between a finish and its settling, a job
finished by the rescue) or that were deleted, so that no job waits forever."""

from __future__ import annotations

import logging

from django.db import Error, close_old_connections

from django_sqlqueue.db import dependencies
from django_sqlqueue.maintenance.service import Service
from django_sqlqueue.models import Job

logger = logging.getLogger(__name__)

#: The sweep runs this often while it finds nothing to settle.
SWEEP_SECONDS = 5.0
#: And this often while a backlog lasts.
SWEEP_BACKLOG_SECONDS = 0.5


class DependenciesService(Service):
    """Settles up to ``dependencies.CHUNK`` finished or deleted jobs that others still
    wait for, a turn. Settling is compare-and-set on each link, so a sweep racing a
    finish settles each link once. A failure is logged and tried again next turn."""

    name = "dependencies"
    interval = SWEEP_SECONDS

    def run(self, now: float) -> float:
        try:
            settled = dependencies.sweep(Job, Job.objects.on_queue_db().db)
        except Error as error:
            logger.warning("Sweeping waiting jobs failed (%s); trying again in %g s", error, self.interval)
            return self.interval
        finally:
            close_old_connections()
        if settled:
            logger.info("Settled %d finished or deleted jobs that others waited for", settled)
        return SWEEP_BACKLOG_SECONDS if settled == dependencies.CHUNK else self.interval
