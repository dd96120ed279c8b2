"""The overview's charts: per queue, jobs succeeded and failed per minute over the last
hour and per hour over the last 7 days, by the database's clock.

The hour's chart is one grouped query over its range of the ``sqlqueue_job_finished``
index (``finished_at, status``), by queue and truncated minute. The week's reads the
hours already counted (``FinishedHour``, a few hundred rows, see ``db/rollup.py``),
counting first any that have closed and are not (when no maintenance leader did), and
groups the jobs of the hours left (the current one, the one settling) like the hour's
chart. The bars are drawn on the server as inline SVG."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import DatabaseError
from django.db.models import Count, Q
from django.db.models.functions import TruncHour, TruncMinute
from django.db.models.functions.datetime import TruncBase

from django_sqlqueue.db import rollup
from django_sqlqueue.db.clock import database_now
from django_sqlqueue.db.routing import queue_db, read_db
from django_sqlqueue.db.schema.indexes import finished_in
from django_sqlqueue.managers import JobQuerySet
from django_sqlqueue.models import FinishedHour, Job
from django_sqlqueue.rules.lifecycle import JobStatus

logger = logging.getLogger(__name__)

CHART_WIDTH = 240
CHART_HEIGHT = 40


@dataclass(frozen=True)
class Span:
    """What one chart covers: ``buckets`` of ``step``, the newest ending now."""

    title: str
    buckets: int
    step: datetime.timedelta
    #: How a bucket's age reads in a bar's tooltip, and a bucket's name ("per minute").
    unit: str
    per: str
    trunc: type[TruncBase]
    #: Whether its closed buckets are read from the hours counted (``db/rollup.py``).
    counted: bool = False

    @property
    def bar_width(self) -> float:
        return CHART_WIDTH / self.buckets

    def first(self, now: datetime.datetime) -> datetime.datetime:
        """The start of the oldest bucket, the newest being the one ``now`` is in."""
        newest = now.replace(second=0, microsecond=0)
        if self.step == rollup.HOUR:
            newest = rollup.floor_hour(now)
        return newest - (self.buckets - 1) * self.step


LAST_HOUR = Span("Last hour", 60, datetime.timedelta(minutes=1), "min", "minute", TruncMinute)
LAST_WEEK = Span("Last 7 days", rollup.WINDOW, rollup.HOUR, "h", "hour", TruncHour, counted=True)
SPANS = (LAST_HOUR, LAST_WEEK)


@dataclass(frozen=True)
class Bar:
    """One bucket with jobs in it, ready to draw: failed stacked on succeeded."""

    x: float
    succeeded_y: float
    succeeded_height: float
    failed_y: float
    failed_height: float
    succeeded: int
    failed: int
    #: How many steps ago the bucket began (0: the current minute or hour).
    ago: int


@dataclass
class Chart:
    """One queue's jobs succeeded and failed per bucket of a span, oldest first."""

    span: Span
    succeeded: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.succeeded = self.succeeded or [0] * self.span.buckets
        self.failed = self.failed or [0] * self.span.buckets

    @property
    def total_succeeded(self) -> int:
        return sum(self.succeeded)

    @property
    def total_failed(self) -> int:
        return sum(self.failed)

    @property
    def peak(self) -> int:
        """The busiest bucket's jobs: the chart's full height."""
        return max(map(sum, zip(self.succeeded, self.failed, strict=True)))

    @property
    def bars(self) -> list[Bar]:
        """The buckets that have jobs, scaled to the busiest."""
        scale = CHART_HEIGHT / (self.peak or 1)
        bars = []
        for index, (succeeded, failed) in enumerate(zip(self.succeeded, self.failed, strict=True)):
            if succeeded or failed:
                top_of_succeeded = CHART_HEIGHT - succeeded * scale
                bars.append(
                    Bar(
                        x=index * self.span.bar_width,
                        succeeded_y=top_of_succeeded,
                        succeeded_height=succeeded * scale,
                        failed_y=top_of_succeeded - failed * scale,
                        failed_height=failed * scale,
                        succeeded=succeeded,
                        failed=failed,
                        ago=self.span.buckets - 1 - index,
                    )
                )
        return bars


def throughput(jobs: JobQuerySet[Job], span: Span) -> dict[str, Chart]:
    """Per queue with a job in ``jobs`` that succeeded or failed for good within
    ``span``, its chart. Buckets are whole minutes or hours (UTC) of the database's
    clock, the newest the current one.

    A counted hour is fixed: a job retried or deleted after its hour was counted still
    counts in that hour."""
    now = database_now(jobs.db)
    first = span.first(now)
    charts: dict[str, Chart] = {}

    def add(queue: str, bucket: datetime.datetime, succeeded: int, failed: int) -> None:
        index = int((bucket - first) // span.step)
        if 0 <= index < span.buckets:
            chart = charts.setdefault(queue, Chart(span))
            chart.succeeded[index] += succeeded
            chart.failed[index] += failed

    if span.counted:
        _hours(jobs, first, now, add)
        return charts
    rows = (
        # Bounded on both sides, so SQLite's planner picks this index, not a skip-scan of
        # sqlqueue_job_queue_status over every finished job (seconds on a large table).
        jobs.filter(
            finished_in(*rollup.CHARTED), finished_at__gte=first, finished_at__lt=first + span.buckets * span.step
        )
        .values_list("queue")
        .annotate(
            bucket=span.trunc("finished_at", tzinfo=datetime.timezone.utc),
            succeeded=Count("pk", filter=Q(status=JobStatus.SUCCESSFUL)),
            failed=Count("pk", filter=Q(status=JobStatus.FAILED)),
        )
        .order_by()
    )
    for queue, bucket, succeeded, failed in rows:
        add(queue, bucket, succeeded, failed)
    return charts


def _hours(
    jobs: JobQuerySet[Job],
    first: datetime.datetime,
    now: datetime.datetime,
    add: Callable[[str, datetime.datetime, int, int], None],
) -> None:
    """The week's hours from ``first``: those counted, after counting the closed ones
    not yet counted, and the others (the current one, the one settling, any a writer
    left out) from their jobs, an hour at a time."""
    try:  # on the primary: it writes
        rollup.catch_up(queue_db(FinishedHour))
    except DatabaseError as error:  # a read-only database user, say: counted from the jobs below
        logger.warning("The 7-day chart could not count its closed hours: %s", error)
    # Read where the router reads: hours a replica has not seen counted yet are counted from its jobs.
    counted = FinishedHour.objects.using(read_db(FinishedHour)).filter(hour__gte=first)
    hours = set()
    for hour, queue, succeeded, failed in counted.values_list("hour", "queue", "succeeded", "failed"):
        hours.add(hour)
        if queue:
            add(queue, hour, succeeded, failed)
    for hour in rollup.hour_range(first, rollup.floor_hour(now) + rollup.HOUR):
        if hour not in hours:
            for queue, succeeded, failed in rollup.tally(jobs, hour):
                add(queue, hour, succeeded, failed)
