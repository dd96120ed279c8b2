"""The workflows' sweep (``db/dependencies.py``): settling what waits for jobs that
finished without settling it (a worker killed between a finish and its settling, a job
finished by the rescue) or that were deleted, so that no job waits forever."""

from __future__ import annotations

from django_sqlqueue.db import dependencies
from django_sqlqueue.maintenance.service import SweepService
from django_sqlqueue.models import Job

#: The sweep runs this often while it finds nothing to settle.
SWEEP_SECONDS = 5.0
#: And this often while a backlog lasts.
SWEEP_BACKLOG_SECONDS = 0.5


class DependenciesService(SweepService):
    """Settles up to ``dependencies.CHUNK`` finished or deleted jobs that others still
    wait for, a turn. Settling is compare-and-set on each link, so a sweep racing a
    finish settles each link once."""

    name = "dependencies"
    interval = SWEEP_SECONDS
    backlog_interval = SWEEP_BACKLOG_SECONDS
    limit = dependencies.CHUNK
    failing = "Sweeping waiting jobs"
    done = "Settled %d finished or deleted jobs that others waited for"

    def sweep(self) -> int:
        return dependencies.sweep(Job, Job.objects.on_queue_db().db)
