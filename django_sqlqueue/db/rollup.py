"""Counting the jobs that succeeded and failed in each hour once the hour is over, into
``FinishedHour`` rows, so that the admin's 7-day chart reads a few hundred rows rather
than every job of the week, and keeps the week that pruning deletes.

An hour is counted once it *closed*: ended ``CLOSE_AFTER`` ago by the database's clock, so
that a finish whose transaction commits a little after its ``finished_at`` is in it.
It is counted from its range of the ``sqlqueue_job_finished`` index, once: its rows and
its totals row (empty queue name) go in with one transaction, and the unique index on
hour and queue makes a second writer's transaction fail whole, so two writers (a
leader and an admin page) never count an hour twice. Pruning counts first and never
deletes a charted job of an hour in the window not yet counted (``counted_until``)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.db.models import Count, Q

from django_sqlqueue.db.clock import database_now
from django_sqlqueue.db.schema.indexes import finished_in
from django_sqlqueue.models import FinishedHour, Job
from django_sqlqueue.rules.lifecycle import JobStatus

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from django_sqlqueue.db.schema.table import AbstractJob

HOUR = datetime.timedelta(hours=1)
#: How long after an hour ends it is counted: finishes stamped within it may commit
#: later (PostgreSQL's clock is the transaction's start; a statement may wait on a lock).
CLOSE_AFTER = datetime.timedelta(minutes=5)
#: The hours the 7-day chart shows, the current one included: these are counted.
WINDOW = 7 * 24
#: Counted hours are deleted this long after they began: the window and a day to spare.
KEEP = datetime.timedelta(days=8)
#: Hours counted by one query and one transaction, at most.
BATCH_HOURS = 24
#: The statuses the chart counts: the pruning of others needs no count first.
CHARTED = (JobStatus.SUCCESSFUL, JobStatus.FAILED)


@dataclass(frozen=True)
class Hours:
    """Where counting stands, by the database's clock at ``now``."""

    now: datetime.datetime
    #: The window's oldest hour.
    first: datetime.datetime
    #: Hours before this one have closed.
    closed: datetime.datetime
    #: The closed hours of the window not counted yet, oldest first.
    missing: list[datetime.datetime]

    @property
    def counted_until(self) -> datetime.datetime:
        """Every charted job that finished before this is counted, or older than the window."""
        return self.missing[0] if self.missing else self.closed


def floor_hour(moment: datetime.datetime) -> datetime.datetime:
    """The start of the hour ``moment`` is in."""
    return moment.replace(minute=0, second=0, microsecond=0)


def hours(using: str) -> Hours:
    """Which hours of the window are counted, and which are due, now."""
    now = database_now(using)
    first = floor_hour(now) - (WINDOW - 1) * HOUR
    closed = floor_hour(now - CLOSE_AFTER)
    counted = set(FinishedHour.objects.using(using).filter(queue="", hour__gte=first).values_list("hour", flat=True))
    missing = [hour for hour in hour_range(first, closed) if hour not in counted]
    return Hours(now, first, closed, missing)


def catch_up(using: str, *, batches: int | None = None) -> Hours:
    """Count the closed hours of the window not counted yet, ``BATCH_HOURS`` at a time,
    at most ``batches`` batches; what is left (``missing``) afterwards.

    A batch another writer counted first (even one of its hours) is dropped whole: that
    writer made progress, and the next call counts what is still missing."""
    state = hours(using)
    batch_starts = range(0, len(state.missing), BATCH_HOURS)
    for start in list(batch_starts)[:batches]:
        _count(state.missing[start : start + BATCH_HOURS], using)
    return hours(using) if state.missing else state


def forget(using: str) -> int:
    """Delete the counted hours older than ``KEEP``; how many rows went."""
    now = database_now(using)
    deleted, _ = FinishedHour.objects.using(using).filter(hour__lt=floor_hour(now) - KEEP).delete()
    return deleted


def tally(jobs: QuerySet[AbstractJob], hour: datetime.datetime) -> list[tuple[str, int, int]]:
    """(queue, succeeded, failed) of ``jobs`` that finished within ``hour``: one range
    of the ``sqlqueue_job_finished`` index, grouped by queue (no per-row time function,
    which SQLite runs in Python)."""
    return list(
        jobs.filter(finished_in(*CHARTED), finished_at__gte=hour, finished_at__lt=hour + HOUR)
        .values_list("queue")
        .annotate(
            succeeded=Count("pk", filter=Q(status=JobStatus.SUCCESSFUL)),
            failed=Count("pk", filter=Q(status=JobStatus.FAILED)),
        )
        .order_by()
    )


def _count(hours: list[datetime.datetime], using: str) -> None:
    jobs = Job.objects.db_manager(using).get_queryset()
    # Quiet hours (a new site, a test) cost one look, not one query each.
    quiet = not jobs.filter(finished_in(*CHARTED), finished_at__gte=hours[0], finished_at__lt=hours[-1] + HOUR).exists()
    rows = []
    for hour in hours:
        counts = [
            FinishedHour(hour=hour, queue=queue, succeeded=ok, failed=ko)
            for queue, ok, ko in ([] if quiet else tally(jobs, hour))
        ]
        total = FinishedHour(
            hour=hour, queue="", succeeded=sum(c.succeeded for c in counts), failed=sum(c.failed for c in counts)
        )
        rows += [total, *counts]
    try:
        with transaction.atomic(using=using):
            # An hour's totals row first: a second writer fails there, before its other rows.
            FinishedHour.objects.using(using).bulk_create(rows)
    except IntegrityError:
        pass  # counted by another writer meanwhile


def hour_range(start: datetime.datetime, end: datetime.datetime) -> list[datetime.datetime]:
    """The hours from ``start`` (the start of one) up to ``end``, excluded."""
    return [start + n * HOUR for n in range(max(0, int((end - start) / HOUR)))]
