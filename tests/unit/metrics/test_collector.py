"""The gauges a scrape reads from the database."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from django.utils import timezone
from prometheus_client import CollectorRegistry, Counter

from django_sqlqueue.metrics.collector import scrape_registry
from django_sqlqueue.models import JobStatus, Worker
from tests.support.admin_helpers import make_job

pytestmark = pytest.mark.django_db


def test_jobs_by_queue_and_status_lags_and_live_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    make_job(run_at=timezone.now() - datetime.timedelta(minutes=5))
    make_job(JobStatus.RUNNING)
    make_job(JobStatus.SUCCESSFUL, queue="mail", finished_at=timezone.now())
    make_job(JobStatus.FAILED, queue="mail", finished_at=timezone.now())
    Worker.objects.create(name="a", host="h1", pid=1)
    Worker.objects.create(name="dead", host="h1", pid=2)
    Worker.objects.filter(name="dead").update(heartbeat_at=timezone.now() - datetime.timedelta(hours=1))

    registry = scrape_registry()
    value = registry.get_sample_value
    assert value("sqlqueue_jobs", {"queue": "default", "status": "READY"}) == 1
    assert value("sqlqueue_jobs", {"queue": "default", "status": "RUNNING"}) == 1
    assert value("sqlqueue_jobs", {"queue": "default", "status": "FAILED"}) == 0
    assert value("sqlqueue_jobs", {"queue": "mail", "status": "SUCCESSFUL"}) == 1
    assert value("sqlqueue_jobs", {"queue": "mail", "status": "FAILED"}) == 1
    lag = value("sqlqueue_queue_lag_seconds", {"queue": "default"})
    assert lag is not None
    assert 300 <= lag < 360
    assert value("sqlqueue_queue_lag_seconds", {"queue": "mail"}) == 0
    assert value("sqlqueue_workers_alive") == 1


def test_an_empty_queue_table_has_no_queue_series_and_no_worker() -> None:
    registry = scrape_registry()
    assert registry.get_sample_value("sqlqueue_jobs", {"queue": "default", "status": "READY"}) is None
    assert registry.get_sample_value("sqlqueue_workers_alive") == 0


def test_the_multiprocess_directory_s_counters_are_added(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a worker process wrote there: the client's multiprocess files, made here by
    # a metric of the same kind while the directory is set.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    from prometheus_client import values

    monkeypatch.setattr(values, "ValueClass", values.MultiProcessValue())  # type: ignore[no-untyped-call]
    Counter("sqlqueue_test_ticks", "A test's counter.", registry=CollectorRegistry()).inc(3)
    assert scrape_registry().get_sample_value("sqlqueue_test_ticks_total") == 3
