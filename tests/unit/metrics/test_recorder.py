"""The job metrics a worker process records from ``job_finished``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_sqlqueue.metrics import recorder
from django_sqlqueue.models import Job
from django_sqlqueue.testing import Ran, perform, run_jobs
from tests.testapp.tasks import add, fail

pytestmark = pytest.mark.django_db


@pytest.fixture
def recording() -> Iterator[recorder.JobMetrics]:
    recorder.connect()
    try:
        yield recorder.job_metrics()
    finally:
        recorder.disconnect()


def sample(metrics: recorder.JobMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_finished_attempts_are_counted_by_task_queue_and_outcome(recording: recorder.JobMetrics) -> None:
    succeeded = {"task": "tests.testapp.tasks.add", "queue": "default", "outcome": "succeeded"}
    failed = {"task": "testapp.fail", "queue": "default", "outcome": "failed"}
    before = sample(recording, "sqlqueue_jobs_finished_total", **succeeded)
    before_failed = sample(recording, "sqlqueue_jobs_finished_total", **failed)
    before_durations = sample(
        recording, "sqlqueue_job_duration_seconds_count", task="tests.testapp.tasks.add", outcome="succeeded"
    )
    Job.objects.enqueue(add, [1, 2])
    Job.objects.enqueue(add, [3, 4])
    Job.objects.enqueue(fail, ["boom"], max_attempts=1)
    assert run_jobs() == Ran(succeeded=2, failed=1)
    assert sample(recording, "sqlqueue_jobs_finished_total", **succeeded) == before + 2
    assert sample(recording, "sqlqueue_jobs_finished_total", **failed) == before_failed + 1
    assert (
        sample(recording, "sqlqueue_job_duration_seconds_count", task="tests.testapp.tasks.add", outcome="succeeded")
        == before_durations + 2
    )


def test_nothing_is_recorded_unless_connected() -> None:
    labels = {"task": "tests.testapp.tasks.add", "queue": "default", "outcome": "succeeded"}
    before = sample(recorder.job_metrics(), "sqlqueue_jobs_finished_total", **labels)
    assert perform(add, 1, 2) == 3
    assert sample(recorder.job_metrics(), "sqlqueue_jobs_finished_total", **labels) == before
