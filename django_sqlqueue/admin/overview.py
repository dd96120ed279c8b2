"""The queue overview: per queue, jobs by status, the lag of the oldest due job, and
the jobs finished per minute over the last hour, drawn as a small server-side SVG.

Three grouped queries (and the few paused queues), whatever the number of jobs: the counts read the
``sqlqueue_job_queue_status`` index only, the lag the small partial index of ready
jobs, and the throughput the ``sqlqueue_job_finished`` range of the last hour."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db.models import Count, Max
from django.db.models.functions import TruncMinute

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.models import Job, PausedQueue
from django_sqlqueue.pausing import paused_queues
from django_sqlqueue.stats import queue_lags, status_counts, whole_seconds
from django_sqlqueue.status import JobStatus

MINUTES = 60
CHART_WIDTH = 180
CHART_HEIGHT = 32
BAR_WIDTH = CHART_WIDTH / MINUTES


@dataclass
class Bar:
    """One minute of the chart, ready to draw."""

    x: float
    y: float
    height: float
    finished: int
    minutes_ago: int


@dataclass
class QueueStats:
    """What the overview shows of one queue."""

    queue: str
    counts: dict[str, int] = field(default_factory=dict)
    #: How long the oldest due ``READY`` job has waited; None when none is due.
    lag: datetime.timedelta | None = None
    #: Jobs finished (succeeded, failed for good or cancelled) per minute, oldest first.
    per_minute: list[int] = field(default_factory=lambda: [0] * MINUTES)
    #: Its pause, while workers do not claim from it.
    paused: PausedQueue | None = None

    @property
    def by_status(self) -> list[tuple[str, str, int]]:
        """(status, label, count) for every status, in the statuses' order."""
        return [(status.value, status.label, self.counts.get(status.value, 0)) for status in JobStatus]

    @property
    def lag_text(self) -> str:
        """The lag to the second, or "-" when no job is due."""
        return "-" if self.lag is None else whole_seconds(self.lag)

    @property
    def finished_last_hour(self) -> int:
        return sum(self.per_minute)

    @property
    def bars(self) -> list[Bar]:
        """The chart's bars, scaled to the busiest minute."""
        top = max(self.per_minute) or 1
        bars = []
        for index, finished in enumerate(self.per_minute):
            height = CHART_HEIGHT * finished / top
            bars.append(Bar(index * BAR_WIDTH, CHART_HEIGHT - height, height, finished, MINUTES - 1 - index))
        return bars


def queue_stats() -> list[QueueStats]:
    """The overview of every queue that has jobs or is paused, by queue name."""
    jobs = Job.objects
    stats: dict[str, QueueStats] = {}

    def of(queue: str) -> QueueStats:
        return stats.setdefault(queue, QueueStats(queue))

    for queue, counts in status_counts(jobs.get_queryset()).items():
        of(queue).counts = counts
    for queue, lag in queue_lags(jobs.get_queryset()).items():
        of(queue).lag = lag
    for queue, paused in paused_queues().items():
        of(queue).paused = paused
    last_hour = jobs.filter(finished_at__gte=DatabaseNow() - datetime.timedelta(minutes=MINUTES))
    minutes = (
        last_hour.values_list("queue")
        .annotate(
            minute=TruncMinute("finished_at", tzinfo=datetime.timezone.utc), now=Max(DatabaseNow()), finished=Count("*")
        )
        .order_by()
    )
    for queue, minute, now, finished in minutes:
        ago = int((now - minute).total_seconds() // 60)
        if 0 <= ago < MINUTES:
            of(queue).per_minute[MINUTES - 1 - ago] += finished
    return [stats[queue] for queue in sorted(stats)]
