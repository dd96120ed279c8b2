"""Pausing queues with real ``runworkers``: claims stop within a second of a pause and
start again on resume (by ``NOTIFY`` on PostgreSQL, by a poll of at most a second
elsewhere: the workers here would otherwise poll every 30 s), running jobs finish, and
jobs can be enqueued meanwhile."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from django_sqlqueue import pause_queue, resume_queue
from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import Workers, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import noop, sleep_once_started

pytestmark = pytest.mark.slow

StartWorkers = Callable[..., Workers]

#: Longer than any wait in these tests: a job claimed in time was claimed for a pause or
#: resume, not by a poll that happened to come.
SLOW_POLL = {"SQLQUEUE_POLL_INTERVAL": "30"}


def status_of(job: Job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def test_a_paused_queue_is_not_claimed_until_it_is_resumed(start_workers: StartWorkers) -> None:
    workers = start_workers("--processes", "1", "--threads", "2", **SLOW_POLL)
    first = Job.objects.enqueue(noop)
    wait_until(lambda: status_of(first) == JobStatus.SUCCESSFUL, timeout=60, why=workers.text)

    assert pause_queue("default", "test") is True
    time.sleep(1.5)  # "within a second", with room for a slow machine
    paused = Job.objects.enqueue(noop)  # enqueueing goes on
    other = Job.objects.enqueue(noop, queue="other")
    wait_until(lambda: status_of(other) == JobStatus.SUCCESSFUL, timeout=30, why=workers.text)
    time.sleep(1.5)  # the worker claimed since, and not the paused job
    assert status_of(paused) == JobStatus.READY

    assert resume_queue("default") is True
    wait_until(lambda: status_of(paused) == JobStatus.SUCCESSFUL, timeout=15, why=workers.text)
    assert workers.stop() == 0, workers.text()


def test_a_running_job_finishes_and_the_status_line_names_the_paused_queue(start_workers: StartWorkers) -> None:
    workers = start_workers("--processes", "1", **SLOW_POLL)
    running = Job.objects.enqueue(sleep_once_started, ("started", 2.0))
    wait_until(lambda: Receipt.objects.filter(token="started").exists(), timeout=60, why=workers.text)
    pause_queue("default")
    waiting = Job.objects.enqueue(noop)
    wait_until(lambda: status_of(running) == JobStatus.SUCCESSFUL, timeout=30, why=workers.text)
    time.sleep(1.5)
    assert status_of(waiting) == JobStatus.READY
    assert workers.stop() == 0, workers.text()
    assert workers.text().rstrip().splitlines()[-1].endswith("; paused default")
    assert status_of(waiting) == JobStatus.READY
