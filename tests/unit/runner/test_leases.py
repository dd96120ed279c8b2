"""The supervisor's keeping of its workers' leases (``runner/leases.py``)."""

from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys

import pytest
from django.db.models import F

from django_sqlqueue.models import Job, Worker
from django_sqlqueue.runner.leases import keep_lease, stopped
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db


def late_worker(name: str, *, seconds_ago: float) -> Worker:
    worker = Worker.objects.create(name=name, host="h", pid=1)
    Worker.objects.filter(pk=worker.pk).update(heartbeat_at=F("heartbeat_at") - datetime.timedelta(seconds=seconds_ago))
    worker.refresh_from_db()
    return worker


def started_job(worker: str) -> Job:
    Job.objects.enqueue(noop)
    [job] = Job.objects.claim(worker_id=worker)
    return job


def test_a_late_worker_that_holds_a_started_job_is_kept() -> None:
    worker = late_worker("w", seconds_ago=30)
    job = started_job("w")
    assert keep_lease("w", [job.pk]) is True
    assert not Worker.objects.expired().filter(name="w").exists()
    assert Worker.objects.get(name="w").heartbeat_at > worker.heartbeat_at


def test_a_worker_whose_own_heartbeat_is_on_time_is_not_written() -> None:
    worker = late_worker("w", seconds_ago=0)
    job = started_job("w")
    assert keep_lease("w", [job.pk]) is False
    assert Worker.objects.get(name="w").heartbeat_at == worker.heartbeat_at


def test_a_worker_whose_jobs_were_taken_or_whose_row_is_gone_is_not_kept() -> None:
    late_worker("w", seconds_ago=30)
    job = started_job("w")
    Job.objects.filter(pk=job.pk).update(worker="other")  # rescued, and claimed again elsewhere
    assert keep_lease("w", [job.pk]) is False
    assert keep_lease("gone", [started_job("gone").pk]) is False
    assert not Worker.objects.filter(name="gone").exists()


def test_stopped_tells_a_stopped_process_from_a_running_one() -> None:
    if not os.path.isdir("/proc"):
        pytest.skip("read from Linux's /proc")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert stopped(child.pid) is False
        os.kill(child.pid, signal.SIGSTOP)
        os.waitpid(child.pid, os.WUNTRACED)
        assert stopped(child.pid) is True
    finally:
        child.kill()
        child.wait()
    assert stopped(child.pid) is False  # gone
