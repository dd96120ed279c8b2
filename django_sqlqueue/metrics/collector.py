"""The gauges read from the database at scrape time: jobs by queue and status, the lag
of each queue, the live workers. They come from :func:`django_sqlqueue.reporting.stats.snapshot`,
whose queries read indexes (and past a million rows estimate the finished statuses,
see ``counting``), so a scrape stays cheap at any size."""

from __future__ import annotations

import os
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from django_sqlqueue.db.routing import read_db
from django_sqlqueue.models import Job
from django_sqlqueue.reporting.stats import snapshot
from django_sqlqueue.rules.lifecycle import JobStatus


class QueueCollector(Collector):
    """The queue's gauges, read where the router sends the jobs table's reads at each ``collect()``."""

    def collect(self) -> Iterator[Metric]:
        figures = snapshot(read_db(Job))
        jobs = GaugeMetricFamily(
            "sqlqueue_jobs",
            "Jobs by queue and status (finished statuses estimated past a million rows).",
            labels=["queue", "status"],
        )
        lags = GaugeMetricFamily(
            "sqlqueue_queue_lag_seconds",
            "How long the oldest due READY job of the queue has waited; 0 when none waits.",
            labels=["queue"],
        )
        for queue in figures.queues:
            for status in JobStatus.values:
                jobs.add_metric([queue.queue, status], queue.counts.get(status, 0))
            lags.add_metric([queue.queue], 0.0 if queue.lag is None else max(queue.lag.total_seconds(), 0.0))
        yield jobs
        yield lags
        yield GaugeMetricFamily(
            "sqlqueue_workers_alive",
            "Worker processes whose heartbeat is within SQLQUEUE_LEASE, on every machine.",
            value=len(figures.workers),
        )


def scrape_registry() -> CollectorRegistry:
    """What a scrape shows: the queue's gauges, and the counters and histograms every
    process wrote to ``PROMETHEUS_MULTIPROC_DIR`` when it is set (the worker processes'
    finished jobs, when they share this machine and directory)."""
    registry = CollectorRegistry()
    registry.register(QueueCollector())
    if path := os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    return registry
