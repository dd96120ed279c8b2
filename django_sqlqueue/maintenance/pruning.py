"""Deleting finished jobs past ``SQLQUEUE_RETENTION`` (``db/pruning.py``), a few chunks a
turn so that one turn never stalls the supervisor's loop: every minute once nothing is
left, sooner while a backlog lasts, never more than its share of the time."""

from __future__ import annotations

import logging
import time

from django.db import Error, close_old_connections

from django_sqlqueue.conf import conf
from django_sqlqueue.db import pruning
from django_sqlqueue.maintenance.service import Service
from django_sqlqueue.models import Job

logger = logging.getLogger(__name__)

#: Finished jobs past ``SQLQUEUE_RETENTION`` are pruned this often, at most this many
#: chunks (of ``pruning.BATCH_SIZE``) at a time so that one tick never stalls the loop;
#: while more are left, the next chunks follow after the backlog pause.
PRUNE_SECONDS = 60.0
PRUNE_BACKLOG_SECONDS = 1.0
PRUNE_CHUNKS = 5


def prune_again_in(busy: float, *, complete: bool) -> float:
    """Seconds until the next pruning turn, after one that took ``busy`` seconds: a
    minute once nothing is left to delete; while jobs are left, a second, or longer
    when turns are slow (a big table, a loaded database), so that pruning keeps to its
    share of the time (``pruning.DUTY_CYCLE``) and the workers keep the rest."""
    if complete:
        return PRUNE_SECONDS
    return max(PRUNE_BACKLOG_SECONDS, pruning.rest_after(busy, pruning.DUTY_CYCLE))


class PruningService(Service):
    """Deletes up to :data:`PRUNE_CHUNKS` chunks of finished jobs past their retention a
    turn, counting the closed hours first (``db/pruning.py``).

    Only the lease's holder prunes, but the deletes go by primary key and check the row
    again, so two deleting the same rows is harmless. A failure is logged and tried
    again at the next interval; it never stops the workers."""

    name = "pruning"
    interval = PRUNE_SECONDS

    def run(self, now: float) -> float:
        began = time.monotonic()
        complete = self._prune()
        finished = time.monotonic()
        return finished - now + prune_again_in(finished - began, complete=complete)

    def _prune(self) -> bool:
        """Whether nothing is left to delete (or count) for now."""
        try:
            pruned = pruning.prune(Job.objects.on_queue_db(), conf.SQLQUEUE_RETENTION, max_chunks=PRUNE_CHUNKS)
        except Error as error:
            logger.warning("Pruning finished jobs failed (%s); trying again in %g s", error, PRUNE_SECONDS)
            return True
        finally:
            close_old_connections()
        if pruned.total:
            logger.info("Pruned %d finished jobs past SQLQUEUE_RETENTION", pruned.total)
        return pruned.complete
