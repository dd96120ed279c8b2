"""The metrics a worker process records from the job signals: jobs finished by task,
queue and outcome, and how long their attempts took. In the client's multiprocess mode
(``PROMETHEUS_MULTIPROC_DIR``, which ``runworkers --metrics-port`` sets) each process
writes them to its own files, which a scrape adds up."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from django_sqlqueue import signals
from django_sqlqueue.models import Job

#: Seconds, from a quick job to an hour-long one.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)


@dataclass(frozen=True)
class JobMetrics:
    """The process's job metrics, and the registry that holds them (for a process not in
    multiprocess mode, such as a test)."""

    registry: CollectorRegistry
    finished: Counter
    duration: Histogram


@functools.cache
def job_metrics() -> JobMetrics:
    """The process's one set of job metrics, made at first use: after the supervisor
    has set ``PROMETHEUS_MULTIPROC_DIR``, which the client reads when it is imported."""
    registry = CollectorRegistry()
    finished = Counter(
        "sqlqueue_jobs_finished",
        "Attempts finished by the workers, by task, queue and outcome "
        "(succeeded, retried, snoozed, cancelled, failed).",
        ["task", "queue", "outcome"],
        registry=registry,
    )
    duration = Histogram(
        "sqlqueue_job_duration_seconds",
        "How long attempts ran, by task and outcome.",
        ["task", "outcome"],
        buckets=DURATION_BUCKETS,
        registry=registry,
    )
    return JobMetrics(registry, finished, duration)


def record(sender: type[Job], *, job: Job, outcome: str, duration: float, **ignored: Any) -> None:
    """A ``job_finished`` receiver: count the attempt and its duration."""
    metrics = job_metrics()
    metrics.finished.labels(task=job.task, queue=job.queue, outcome=outcome).inc()
    metrics.duration.labels(task=job.task, outcome=outcome).observe(duration)


def connect() -> None:
    """Record every job this process runs from now on."""
    signals.job_finished.connect(record, sender=Job, dispatch_uid="django_sqlqueue.metrics.recorder")


def disconnect() -> None:
    """Stop recording (for tests)."""
    signals.job_finished.disconnect(sender=Job, dispatch_uid="django_sqlqueue.metrics.recorder")
