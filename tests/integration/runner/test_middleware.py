"""The real ``runworkers`` with ``SQLQUEUE_MIDDLEWARE``: the chain is built once per
worker process and wraps every attempt in a job thread; a middleware that raises fails
the attempt; every outcome's signal is sent once, from the worker's main thread, past a
receiver that raises."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import Workers
from tests.testapp.tasks import add, fail_once, noop

MIDDLEWARE = json.dumps(["tests.support.middleware.signalling", "tests.support.middleware.recording"])


def test_runworkers_runs_every_attempt_through_the_middleware_and_signals_each_outcome_once(
    start_workers: Callable[..., Workers], tmp_path: Path
) -> None:
    log = tmp_path / "noted.log"
    done, flaky = Job.objects.enqueue(add, [2, 3]), Job.objects.enqueue(fail_once, ["flaky"])
    refused = Job.objects.enqueue(noop, kwargs={"refuse": True}, max_attempts=1)

    env = {"SQLQUEUE_MIDDLEWARE": MIDDLEWARE, "SQLQUEUE_TEST_LOG": str(log)}
    # The retry an hour away: the burst ends before it, and a second one runs it, made due.
    later = {"SQLQUEUE_RETRY_BACKOFF": "3600", "SQLQUEUE_RETRY_BACKOFF_MAX": "3600"}
    first = start_workers("--burst", "--processes", "1", **env, **later)
    assert first.wait(120) == 0, first.text()
    assert Job.objects.filter(pk=flaky.pk, status=JobStatus.READY).update(run_at=DatabaseNow()) == 1
    second = start_workers("--burst", "--processes", "1", **env)
    assert second.wait(120) == 0, second.text()

    rows = {job.pk: job for job in Job.objects.filter(pk__in=[done.pk, flaky.pk, refused.pk])}
    assert [(rows[job.pk].status, rows[job.pk].result) for job in (done, flaky, refused)] == [
        (JobStatus.SUCCESSFUL, 5),
        (JobStatus.SUCCESSFUL, "flaky"),
        (JobStatus.FAILED, None),
    ]
    assert rows[refused.pk].last_error_class == "tests.support.middleware.Refused"

    noted = log.read_text().splitlines()
    # Built once per worker process, before any job.
    assert [line for line in noted if line.endswith("built")] == ["recording built", "recording built"]
    assert noted[0] == "recording built"
    # One thread: the jobs run in claim order, the flaky one's retry in the second burst.
    ran = [(done, 1), (flaky, 1), (refused, 1), (flaky, 2)]
    assert [line for line in noted if line.startswith("recording before")] == [
        f"recording before {job.pk} attempt {attempt} current {job.pk} thread other" for job, attempt in ran
    ]
    # Once each, in that order, after the outcome was written, from the worker's main
    # thread; the receiver that raises on each of them changed nothing.
    assert [line for line in noted if line.startswith("signal")] == [
        f"signal {said} thread main"
        for said in (
            f"succeeded {done.pk} SUCCESSFUL",
            f"retried {flaky.pk} READY RuntimeError",
            f"failed {refused.pk} FAILED Refused",
            f"succeeded {flaky.pk} SUCCESSFUL",
        )
    ]
    assert "Receiver <function broken" in first.text()
