"""The guide's middleware and failure receiver, run as a worker runs them."""

from __future__ import annotations

import logging

import pytest

from django_sqlqueue.models import Job
from shop import tasks


def test_a_timeout_runs_once_more_within_its_attempt(sqlqueue, caplog):
    tasks.fetched.clear()
    with caplog.at_level(logging.INFO, logger="shop.middleware"):
        assert sqlqueue.perform(tasks.fetch_rates, timeouts=1) == {"EUR": 1.0}
    job = Job.objects.get()
    assert (job.attempts, tasks.fetched[job.pk]) == (1, 2)
    (timed,) = [r for r in caplog.records if r.name == "shop.middleware"]
    assert timed.getMessage().startswith("shop.tasks.fetch_rates took ")


def test_a_job_that_failed_for_good_is_reported(
    sqlqueue, caplog, django_capture_on_commit_callbacks
):
    tasks.fetched.clear()
    # The signal is sent once the FAILED status commits (the test's never does).
    with (
        django_capture_on_commit_callbacks(execute=True),
        caplog.at_level(logging.ERROR, logger="shop.receivers"),
        pytest.raises(TimeoutError),
    ):
        sqlqueue.perform(tasks.fetch_rates, timeouts=2)
    job = Job.objects.get()
    assert [
        r.getMessage() for r in caplog.records if r.name == "shop.receivers"
    ] == [
        f"Job {job.pk} (shop.tasks.fetch_rates) failed for good: "
        "TimeoutError('the rates service did not answer')"
    ]
