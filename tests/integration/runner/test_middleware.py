"""The real ``runworkers`` with ``SQLQUEUE_MIDDLEWARE``: the chain is built once per
worker process and wraps every attempt in a job thread; a middleware that raises fails
the attempt; every outcome's signal is sent once, from the worker's main thread, past a
receiver that raises."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

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

    first = start_workers("--burst", "--processes", "1", SQLQUEUE_MIDDLEWARE=MIDDLEWARE, SQLQUEUE_TEST_LOG=str(log))
    assert first.wait(120) == 0, first.text()
    # The burst ended before the flaky job's retry was due: a second one runs it.
    deadline = time.monotonic() + 30
    while not Job.objects.ready().filter(pk=flaky.pk).exists():
        assert time.monotonic() < deadline, "the retry never fell due"
        time.sleep(0.05)
    second = start_workers("--burst", "--processes", "1", SQLQUEUE_MIDDLEWARE=MIDDLEWARE, SQLQUEUE_TEST_LOG=str(log))
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
    attempts = [line for line in noted if line.startswith("recording before")]
    assert sorted(attempts) == sorted(
        [
            f"recording before {done.pk} attempt 1 current {done.pk} thread other",
            f"recording before {flaky.pk} attempt 1 current {flaky.pk} thread other",
            f"recording before {refused.pk} attempt 1 current {refused.pk} thread other",
            f"recording before {flaky.pk} attempt 2 current {flaky.pk} thread other",
        ]
    )
    # Once each, after the outcome was written, from the worker's main thread; the
    # receiver that raises on each of them changed nothing.
    signalled = [line for line in noted if line.startswith("signal")]
    assert sorted(signalled) == sorted(
        [
            f"signal succeeded {done.pk} SUCCESSFUL thread main",
            f"signal retried {flaky.pk} READY RuntimeError thread main",
            f"signal failed {refused.pk} FAILED Refused thread main",
            f"signal succeeded {flaky.pk} SUCCESSFUL thread main",
        ]
    )
    assert noted.index(f"signal retried {flaky.pk} READY RuntimeError thread main") < noted.index(
        f"signal succeeded {flaky.pk} SUCCESSFUL thread main"
    )
    assert "Receiver <function broken" in first.text()
