"""Figures about the queue that more than one place shows: the admin's overview,
``sqlqueue_health`` and ``sqlqueue_stats`` read them from the same queries.

Each reads an index, whatever the number of jobs: the counts are ``counting``'s, the
lags read the small partial index of ready jobs, the recent outcomes the
``sqlqueue_job_finished`` range of the last hour."""

from __future__ import annotations

import datetime
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db.models import Count, F, Min, Q

from django_sqlqueue.db.clock import DatabaseNow, database_now
from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.pausing import paused_queues
from django_sqlqueue.managers import JobQuerySet
from django_sqlqueue.models import Job, Worker
from django_sqlqueue.reporting.counting import ESTIMATE_ABOVE_ROWS, queue_counts
from django_sqlqueue.rules.lifecycle import EXPIRED, JobStatus

MINUTE = datetime.timedelta(minutes=1)
HOUR = datetime.timedelta(hours=1)


def queue_lags(jobs: JobQuerySet[Job]) -> dict[str, datetime.timedelta]:
    """Per queue with a due ``READY`` job in ``jobs``, how long the oldest has waited, by
    the database's clock. Reads the small partial index of ready jobs only."""
    rows = jobs.ready().values_list("queue").annotate(lag=DatabaseNow() - Min("run_at")).order_by()
    return dict(rows)


def whole_seconds(duration: datetime.timedelta) -> str:
    """``duration`` as H:MM:SS, to the second: how a lag reads."""
    return str(datetime.timedelta(seconds=int(duration.total_seconds())))


@dataclass(frozen=True)
class Recent:
    """A queue's jobs finished (succeeded, failed for good or cancelled) and, of those,
    failed, in the last minute and the last hour by the database's clock; and of the
    cancelled, those that expired (``end_reason`` "expired") in the last hour."""

    finished_last_minute: int = 0
    failed_last_minute: int = 0
    finished_last_hour: int = 0
    failed_last_hour: int = 0
    expired_last_hour: int = 0


def recent_outcomes(jobs: JobQuerySet[Job]) -> dict[str, Recent]:
    """Per queue with a job in ``jobs`` finished within the hour, its :class:`Recent`."""
    minute = Q(finished_at__gte=DatabaseNow() - MINUTE)
    failed = Q(status=JobStatus.FAILED)
    last_hour = engine_for(jobs.db).range_first(jobs, jobs.filter(finished_at__gte=DatabaseNow() - HOUR))
    rows = (
        last_hour.values_list("queue")
        .annotate(
            finished_last_minute=Count("pk", filter=minute),
            failed_last_minute=Count("pk", filter=minute & failed),
            finished_last_hour=Count("pk"),
            failed_last_hour=Count("pk", filter=failed),
            expired_last_hour=Count("pk", filter=Q(end_reason=EXPIRED)),
        )
        .order_by()
    )
    return {queue: Recent(*figures) for queue, *figures in rows}


@dataclass(frozen=True)
class WorkerFigures:
    """One live worker process, as ``sqlqueue_stats`` shows it."""

    name: str
    host: str
    pid: int
    queues: list[str] | None
    jobs_succeeded: int
    jobs_failed: int
    candidates_lost: int
    #: Since its last heartbeat, by the database's clock.
    heartbeat_age: datetime.timedelta


def live_workers(alias: str) -> list[WorkerFigures]:
    """The workers whose heartbeat is within ``SQLQUEUE_LEASE``, by name. Their counters
    are as of their last heartbeat."""
    fields = [name for name in WorkerFigures.__dataclass_fields__ if name != "heartbeat_age"]
    rows = (
        Worker.objects.using(alias)
        .alive()
        .annotate(heartbeat_age=DatabaseNow() - F("heartbeat_at"))
        .order_by("name")
        .values(*fields, "heartbeat_age")
    )
    return [WorkerFigures(**row) for row in rows]


@dataclass(frozen=True)
class QueueFigures:
    """One queue, as ``sqlqueue_stats`` shows it."""

    queue: str
    counts: dict[str, int] = field(default_factory=dict)
    #: The statuses whose count is an estimate (see ``counting``).
    estimated: tuple[str, ...] = ()
    #: How long the oldest due ``READY`` job has waited; None when none is due.
    lag: datetime.timedelta | None = None
    recent: Recent = Recent()
    #: Why it was paused ("" for no reason given); None while it is not paused.
    paused_reason: str | None = None

    @property
    def paused(self) -> bool:
        return self.paused_reason is not None


@dataclass(frozen=True)
class Snapshot:
    """Everything ``sqlqueue_stats`` shows, read at ``now`` by the database's clock."""

    now: datetime.datetime
    queues: list[QueueFigures]
    workers: list[WorkerFigures]

    def as_json(self) -> dict[str, Any]:
        """Plain JSON values: times in ISO 8601, durations in seconds."""
        return {
            "now": self.now.isoformat(),
            "queues": [
                {
                    "queue": queue.queue,
                    "counts": {status: queue.counts.get(status, 0) for status in JobStatus.values},
                    "estimated": list(queue.estimated),
                    "lag_seconds": None if queue.lag is None else queue.lag.total_seconds(),
                    "paused": queue.paused,
                    "paused_reason": queue.paused_reason,
                    **asdict(queue.recent),
                }
                for queue in self.queues
            ],
            "workers": [_worker_json(worker) for worker in self.workers],
            "candidates_lost": sum(worker.candidates_lost for worker in self.workers),
        }


def _worker_json(worker: WorkerFigures) -> dict[str, Any]:
    figures = asdict(worker)
    figures["heartbeat_age_seconds"] = figures.pop("heartbeat_age").total_seconds()
    return figures


def snapshot(alias: str, *, estimate_above: int = ESTIMATE_ABOVE_ROWS) -> Snapshot:
    """Every queue that has jobs or is paused, and every live worker, read on ``alias``.
    With more than ``estimate_above`` rows the finished statuses are estimated, so no
    query reads every row (see ``counting``)."""
    jobs = Job.objects.get_queryset().using(alias)
    found = queue_counts(jobs, estimate_above=estimate_above)
    counts = found.counts
    lags, recent = queue_lags(jobs), recent_outcomes(jobs)
    paused = {queue: row.reason for queue, row in paused_queues(alias).items()}
    queues = [
        QueueFigures(
            queue,
            counts.get(queue, {}),
            found.estimated_statuses(queue),
            lags.get(queue),
            recent.get(queue, Recent()),
            paused.get(queue),
        )
        for queue in sorted(counts.keys() | lags.keys() | recent.keys() | paused.keys())
    ]
    return Snapshot(database_now(alias), queues, live_workers(alias))
