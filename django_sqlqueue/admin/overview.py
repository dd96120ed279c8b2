"""The queue overview: per queue, jobs by status, the lag of the oldest due job, and
charts of the jobs succeeded and failed per minute over the last hour and per hour over
the last 7 days (``throughput``).

A few grouped queries, whatever the number of jobs: the counts are ``counting``'s
(estimated past a million rows), the lag reads the small partial index of ready jobs,
and each chart its span's range of the ``sqlqueue_job_finished`` index. They read
where the router sends reads, as the admin's lists do (a replica, perhaps); only the
counting of the charts' closed hours writes, on the primary."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django_sqlqueue.admin.throughput import SPANS, Chart, throughput
from django_sqlqueue.db.pausing import paused_queues
from django_sqlqueue.db.routing import read_db
from django_sqlqueue.models import Job, PausedQueue
from django_sqlqueue.reporting.counting import queue_counts
from django_sqlqueue.reporting.stats import queue_lags, whole_seconds
from django_sqlqueue.rules.lifecycle import JobStatus


@dataclass
class QueueStats:
    """What the overview shows of one queue."""

    queue: str
    counts: dict[str, int] = field(default_factory=dict)
    #: The statuses whose count is an estimate.
    estimated: tuple[str, ...] = ()
    #: How long the oldest due ``READY`` job has waited; None when none is due.
    lag: datetime.timedelta | None = None
    #: One chart per span of ``throughput.SPANS``, in that order.
    charts: list[Chart] = field(default_factory=lambda: [Chart(span) for span in SPANS])
    #: Its pause, while workers do not claim from it.
    paused: PausedQueue | None = None

    @property
    def by_status(self) -> list[tuple[str, str, str]]:
        """(status, label, count) for every status, in the statuses' order; an estimated
        count reads ``~`` before it."""
        return [
            (status.value, status.label, ("~" if status in self.estimated else "") + str(self.counts.get(status, 0)))
            for status in JobStatus
        ]

    @property
    def lag_text(self) -> str:
        """The lag to the second, or "-" when no job is due."""
        return "-" if self.lag is None else whole_seconds(self.lag)


def queue_stats() -> list[QueueStats]:
    """The overview of every queue that has jobs or is paused, by queue name."""
    jobs = Job.objects
    stats: dict[str, QueueStats] = {}

    def of(queue: str) -> QueueStats:
        return stats.setdefault(queue, QueueStats(queue))

    found = queue_counts(jobs.get_queryset())
    for queue, counts in found.counts.items():
        of(queue).counts, of(queue).estimated = counts, found.estimated_statuses(queue)
    for queue, lag in queue_lags(jobs.get_queryset()).items():
        of(queue).lag = lag
    for queue, paused in paused_queues(read_db(PausedQueue)).items():
        of(queue).paused = paused
    for index, span in enumerate(SPANS):
        for queue, chart in throughput(jobs.get_queryset(), span).items():
            of(queue).charts[index] = chart
    return [stats[queue] for queue in sorted(stats)]
