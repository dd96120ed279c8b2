"""The batches' sweep (``db/batches.py``): the safety net that completes the batches
whose last jobs ended without counting them down (deleted before they finished, or
what a crash left), so that no batch stays open forever. Every other end (a finish, a
cancel, an expiry, a workflow's cancel, a rescue) completes its batch itself, in its
own transaction."""

from __future__ import annotations

from django_sqlqueue.db import batches
from django_sqlqueue.maintenance.service import SweepService
from django_sqlqueue.models import Job

#: The sweep runs this often while it finds nothing to complete.
SWEEP_SECONDS = 5.0
#: And this often while a backlog lasts.
SWEEP_BACKLOG_SECONDS = 0.5


class BatchesService(SweepService):
    """Completes up to ``batches.SWEEP_LIMIT`` open batches without unfinished jobs, a
    turn. Completing is compare-and-set under the batch's row lock, so a sweep racing
    a finish enqueues the callbacks once."""

    name = "batches"
    interval = SWEEP_SECONDS
    backlog_interval = SWEEP_BACKLOG_SECONDS
    limit = batches.SWEEP_LIMIT
    failing = "Sweeping batches"
    done = "Completed %d batches whose jobs had all ended"

    def sweep(self) -> int:
        return batches.sweep(Job, Job.objects.on_queue_db().db)
