"""Snoozes through real ``runworkers --burst``: a job that snoozes runs again at once
(delay 0), its attempts uncounted, until it fails for real or past its ``max_snoozes``;
the supervisor's status line counts the snoozes apart from the retries."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import Workers
from tests.testapp.tasks import snooze, snooze_then_fail

pytestmark = pytest.mark.slow

StartWorkers = Callable[..., Workers]


def test_workers_snooze_jobs_without_counting_their_attempts(start_workers: StartWorkers) -> None:
    failing = Job.objects.enqueue(snooze_then_fail, (2,))
    forever = Job.objects.enqueue(snooze, (0,))
    workers = start_workers("--processes", "1", "--burst")
    assert workers.wait(90) == 0, workers.text()
    failing.refresh_from_db()
    assert (failing.status, failing.attempts, failing.snoozes) == (JobStatus.FAILED, 1, 2), workers.text()
    assert [(error["attempt"], error["message"]) for error in failing.errors] == [(1, "failed after 2 snoozes")]
    forever.refresh_from_db()
    assert (forever.status, forever.attempts, forever.snoozes) == (JobStatus.FAILED, 1, 2), workers.text()
    assert forever.last_error_class == "django_sqlqueue.exceptions.SnoozedTooOften"
    assert "failed attempts to retry 0, snoozed 4;" in workers.text()
