"""Ending ready jobs past their ``expires_at`` (``db/expiry.py``): every few seconds, a
few chunks a turn, sooner while a backlog lasts.

The claim never starts an expired job whatever this service does; it gives those jobs
their end (``CANCELLED``, ``end_reason`` "expired") so that the admin, the stats and
the jobs that wait on them see it."""

from __future__ import annotations

import logging

from django.db import Error, close_old_connections

from django_sqlqueue.db import expiry
from django_sqlqueue.maintenance.service import Service
from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import EXPIRE

logger = logging.getLogger(__name__)

#: Expired jobs are looked for this often once none is left.
EXPIRE_SECONDS = 5.0
#: And this often while a turn left some.
EXPIRE_BACKLOG_SECONDS = 1.0
#: Chunks (of ``expiry.BATCH_SIZE``) a turn at most, so that a turn never stalls the loop.
EXPIRE_CHUNKS = 5


class ExpiryService(Service):
    """Ends up to :data:`EXPIRE_CHUNKS` chunks of expired ready jobs a turn. Each end is
    a compare-and-set on the row, so two holders of the lease at once end and count each
    job once. A failure is logged and tried again at the next interval."""

    name = "expiry"
    interval = EXPIRE_SECONDS

    def run(self, now: float) -> float:
        batch = expiry.BATCH_SIZE
        try:
            ended = Job.objects.expire(max_chunks=EXPIRE_CHUNKS)
        except Error as error:
            logger.warning("Expiring jobs failed (%s); trying again in %g s", error, self.interval)
            return self.interval
        finally:
            close_old_connections()
        if ended:
            logger.info(
                "%d jobs %s: not started by their expires_at",
                ended,
                EXPIRE.outcome,
                extra={"outcome": EXPIRE.outcome, "jobs": ended},
            )
        return EXPIRE_BACKLOG_SECONDS if ended >= batch * EXPIRE_CHUNKS else self.interval
