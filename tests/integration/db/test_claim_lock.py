"""The claim lock (``db/claim_lock.py``) with real ``runworkers`` processes on
MySQL/MariaDB: a lock's file that fails with an OS error at every claim (here a FIFO,
on which every write of the holder's mark fails, as on a full disk) costs the workers
the lock, not their lives."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from django_sqlqueue.db import wakeup
from django_sqlqueue.db.claim_lock import FILE_NAME
from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import Workers
from tests.testapp.tasks import add

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL/MariaDB's claims take turns"),
]


def test_workers_whose_lock_file_fails_at_every_claim_run_every_job_and_say_so_once(
    start_workers: Callable[..., Workers], settings: Any, tmp_path: Path
) -> None:
    base = tmp_path / "run"
    base.mkdir(mode=0o700)
    settings.SQLQUEUE_WAKEUP_DIR = str(base)
    folder = wakeup.make_folder("default")
    assert folder is not None
    os.mkfifo(folder / FILE_NAME, 0o600)
    Job.objects.enqueue_many(Job.objects.build(add, (n, n)) for n in range(50))
    workers = start_workers("--burst", "--processes", "2", "--batch-size", "5", SQLQUEUE_WAKEUP_DIR=str(base))
    assert workers.wait(120) == 0, workers.text()
    output = workers.text()
    assert Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == 50, output
    assert "exited with" not in output, output
    # Once per worker process, not once per claim.
    assert output.count("Claims take no turns ([Errno 29] Illegal seek)") == 2, output
