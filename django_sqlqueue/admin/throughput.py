"""The overview's charts: per queue, jobs succeeded and failed per minute over the last
hour and per hour over the last 7 days, by the database's clock.

One grouped query per chart, whatever the number of jobs: it reads the range of the
``sqlqueue_job_finished`` index (``finished_at, status``) that the span covers, and
groups by queue and truncated time. The bars are drawn on the server as inline SVG."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db.models import Count, Max, Q
from django.db.models.functions import TruncHour, TruncMinute
from django.db.models.functions.datetime import TruncBase

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.managers import JobQuerySet
from django_sqlqueue.status import JobStatus

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

    @property
    def bar_width(self) -> float:
        return CHART_WIDTH / self.buckets


LAST_HOUR = Span("Last hour", 60, datetime.timedelta(minutes=1), "min", "minute", TruncMinute)
LAST_WEEK = Span("Last 7 days", 7 * 24, datetime.timedelta(hours=1), "h", "hour", TruncHour)
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


def throughput(jobs: JobQuerySet, span: Span) -> dict[str, Chart]:
    """Per queue with a job in ``jobs`` that succeeded or failed for good within
    ``span``, its chart. Buckets are whole minutes or hours (UTC) of the database's
    clock, so the oldest one may be partly outside the span."""
    succeeded, failed = Q(status=JobStatus.SUCCESSFUL), Q(status=JobStatus.FAILED)
    rows = (
        jobs.filter(
            finished_at__gte=DatabaseNow() - span.buckets * span.step,
            status__in=[JobStatus.SUCCESSFUL, JobStatus.FAILED],
        )
        .values_list("queue")
        .annotate(
            bucket=span.trunc("finished_at", tzinfo=datetime.timezone.utc),
            now=Max(DatabaseNow()),
            succeeded=Count("pk", filter=succeeded),
            failed=Count("pk", filter=failed),
        )
        .order_by()
    )
    charts: dict[str, Chart] = {}
    for queue, bucket, now, succeeded_count, failed_count in rows:
        ago = int((now - bucket) // span.step)
        if 0 <= ago < span.buckets:
            chart = charts.setdefault(queue, Chart(span))
            chart.succeeded[span.buckets - 1 - ago] += succeeded_count
            chart.failed[span.buckets - 1 - ago] += failed_count
    return charts
