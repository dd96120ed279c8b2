"""The maintenance lease and the services its holder runs (``django_sqlqueue/maintenance/``:
rescue, recurring jobs, rollups and pruning). Every ``runworkers`` supervisor and every
web process with embedded workers competes for the one lease, so that exactly one of
them, wherever it runs, does the maintenance at a time, and another takes over within
a lease when it dies."""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable

from django_sqlqueue.conf import conf
from django_sqlqueue.db import leadership
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.db.transient import unless_unavailable
from django_sqlqueue.maintenance.rescue import Rescued
from django_sqlqueue.maintenance.services import maintenance_services
from django_sqlqueue.models import Leader

logger = logging.getLogger(__name__)

#: The maintenance lease (``SQLQUEUE_LEASE`` long) is renewed this often, at most.
LEAD_SECONDS = 10.0
#: A follower tries to take the lease this long after it runs out (past the holder's
#: renewal in flight, if it is alive).
TAKEOVER_MARGIN_SECONDS = 0.1


class Maintenance:
    """The maintenance of one holder (``holder``, its name on the lease): :meth:`tick`
    renews or tries to take the lease when due, and while it holds it runs each service
    when its own pace says. ``counted`` is told what each rescue wrote; ``by`` names the
    holder in the warnings of a database unavailable."""

    def __init__(self, holder: str, counted: Callable[[Rescued], object], by: str) -> None:
        self.holder = holder
        self.by = by
        self.leading = False
        self.services = maintenance_services(counted)
        self.next_lead = 0.0

    def tick(self, now: float) -> None:
        """Renew (or try to take) the maintenance lease; while it holds it, tick the
        maintenance services, each of which runs when its own pace says."""
        if now >= self.next_lead:
            self.next_lead = now + self.lead()
        if not self.leading:
            return
        for service in self.services:
            service.run_due(now)

    def lead(self) -> float:
        """Take or renew the maintenance lease; the seconds until the next try: a third of
        the lease, or, for a follower, the moment the holder's lease runs out, so that a
        dead leader is replaced within the lease rather than up to a third of it later."""
        lease = datetime.timedelta(seconds=conf.SQLQUEUE_LEASE)
        every = min(conf.SQLQUEUE_LEASE / 3, LEAD_SECONDS)
        leading = unless_unavailable(
            lambda: leadership.acquire(self.holder, lease, queue_db(Leader)), False, by=self.by
        )
        if leading and not self.leading:
            logger.info("%s leads maintenance (rescue, recurring jobs, pruning)", self.holder)
            # What the previous leader was doing is due now.
            for service in self.services:
                service.due_now(time.monotonic())
        elif self.leading and not leading:
            logger.warning("%s lost the maintenance lease", self.holder)
        self.leading = leading
        if leading:
            return every
        left = unless_unavailable(lambda: leadership.expires_in(queue_db(Leader)), None, by=self.by)
        return every if left is None else min(every, max(left, 0.0) + TAKEOVER_MARGIN_SECONDS)

    def step_down(self) -> None:
        """Stopping: give the lease up, so that another holder takes it at once."""
        if self.leading:
            self.leading = False
            unless_unavailable(lambda: leadership.release(self.holder, queue_db(Leader)), None, by=self.by)
