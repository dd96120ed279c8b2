"""Giving back the jobs of workers that died: nothing stays ``RUNNING`` forever. The
supervisor rescues a process it saw die at once (:func:`rescue_worker`); the lease's
holder rescues those of workers anywhere whose lease expired (:class:`RescueService`)."""

from __future__ import annotations

import datetime
import logging
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from django.db import transaction

from django_sqlqueue.conf import conf
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.transient import unless_unavailable
from django_sqlqueue.exceptions import WorkerLost
from django_sqlqueue.maintenance.service import Service
from django_sqlqueue.models import Job, JobStatus, Worker
from django_sqlqueue.rules.failures import decide

logger = logging.getLogger(__name__)

#: The longest between two rescues, whatever ``SQLQUEUE_LEASE``.
RESCUE_SECONDS = 10.0


@dataclass
class Rescued:
    """What a rescue wrote to the jobs it gave back."""

    #: The started jobs, each charged a failed attempt, by the outcome it got
    #: (``rules.lifecycle.OUTCOMES``: ``retried``, ``failed``, or ``cancelled`` when someone asked).
    charged: Counter[str] = field(default_factory=Counter)
    #: The jobs that had not started, back to ``READY`` (or ``CANCELLED``) with their
    #: attempt not counted: ``--max-jobs`` counts them no more.
    released: int = 0

    @property
    def count(self) -> int:
        return sum(self.charged.values()) + self.released

    def __add__(self, other: Rescued) -> Rescued:
        return Rescued(self.charged + other.charged, self.released + other.released)


def rescue_worker(
    name: str,
    error: BaseException,
    *,
    started: Collection[int] | None = None,
    errors: Mapping[int, BaseException] | None = None,
) -> Rescued:
    """Give back every job ``name`` holds: a failed attempt is recorded on the jobs that
    had started (all of them when ``started`` is None, as nobody knows) — ``errors[id]``
    or else ``error`` — and the others go back to ``READY`` with their attempt not
    counted. Returns what it wrote.

    Only for a worker known to be dead (its process exited, or its lease expired), or
    for a live one that runs none of its jobs, with ``started`` empty: a worker whose
    claim's answer was lost with its connection gives back what the claim took."""
    held = list(Job.objects.on_queue_db().filter(status=JobStatus.RUNNING, worker=name))
    if started is None:
        started = {job.pk for job in held}
    errors = errors or {}
    failed = {job: decide(job, errors.get(job.pk, error), name) for job in held if job.pk in started}
    rescued = Rescued(
        Counter(
            ended.transition.outcome
            for ended in Job.objects.finish_as_decided(worker_id=name, succeeded={}, failed=failed)
        ),
        Job.objects.release(worker_id=name, unstarted=[job for job in held if job.pk not in started]),
    )
    if rescued.count:
        logger.warning("Rescued %d job(s) from worker %s: %s", rescued.count, name, error)
    return rescued


def rescue_expired() -> Rescued:
    """Rescue the jobs of every worker whose lease expired, on any machine, and of any
    worker that holds jobs but has no row at all; forget the expired workers."""
    lease = datetime.timedelta(seconds=conf.SQLQUEUE_LEASE)
    rescued = Rescued()
    for name in Worker.objects.expired().values_list("name", flat=True):
        rescued += rescue_worker(name, WorkerLost(f"worker {name} sent no heartbeat for {lease} (SQLQUEUE_LEASE)"))
        with transaction.atomic():
            # Not if it came back to life meanwhile.
            Worker.objects.expired().filter(name=name).delete()
    orphans = (
        Job.objects.on_queue_db()
        .filter(status=JobStatus.RUNNING, started_at__lt=DatabaseNow() - lease)
        .exclude(worker__in=Worker.objects.values("name"))
        .values_list("worker", flat=True)
        .distinct()
    )
    for name in list(orphans):
        rescued += rescue_worker(name, WorkerLost(f"worker {name} is not registered as running"))
    return rescued


class RescueService(Service):
    """Gives back the jobs of the workers whose lease expired (:func:`rescue_expired`),
    every half lease and at least every 10 s, and tells ``counted`` what it wrote (the
    supervisor's status line counts it)."""

    name = "rescue"

    def __init__(self, counted: Callable[[Rescued], object]) -> None:
        super().__init__()
        self.counted = counted

    @property
    def interval(self) -> float:
        return min(conf.SQLQUEUE_LEASE / 2, RESCUE_SECONDS)

    def run(self, now: float) -> float:
        self.counted(unless_unavailable(rescue_expired, Rescued(), by="the rescue"))
        return self.interval
