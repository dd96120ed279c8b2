"""``manage.py demo`` end to end: its producer and consumer processes, then a real
``runworkers`` for the failed jobs it leaves in the admin."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from django_sqlqueue.models import Job, JobStatus
from tests.support.ports import free_port
from tests.support.workers import ROOT


@pytest.fixture
def demo_env(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's processes must open this test's database."""
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))


@pytest.mark.slow
def test_the_demo_runs_headless(demo_env: None) -> None:
    out = StringIO()
    call_command("demo", jobs=120, producers=2, consumers=3, serve=False, stdout=out)
    output = out.getvalue()
    assert re.search(r"^consumer \d+ #records = \d+ - \[\d+", output, re.MULTILINE), output
    assert "summary: enqueued 120, done 120" in output
    assert "candidates lost to other consumers" in output
    assert output.splitlines()[-4:] == [
        "status | count",
        "FAILED | 3",
        "SUCCESSFUL | 120",
        "Demo superuser: demo / demo",
    ]
    assert Job.objects.filter(queue="demo", status=JobStatus.SUCCESSFUL).count() == 120
    failed = Job.objects.filter(queue="triage", status=JobStatus.FAILED)
    assert failed.count() == 3
    assert all(job.errors[0]["exception_class_path"] == "builtins.RuntimeError" for job in failed)
    user = get_user_model().objects.get(username="demo")
    assert user.is_superuser
    assert user.check_password("demo")


@pytest.mark.slow
def test_stopping_the_served_demo_leaves_no_semaphore_behind(
    child_env: dict[str, str], python: str, tmp_path: Path
) -> None:
    """Its producers' and consumers' shared counters are freed before the admin is served,
    so stopping the server (here SIGTERM, as a terminal's or a container's stop) does not
    end with multiprocessing's "leaked semaphore objects" warning."""
    port = str(free_port())
    args = [python, "manage.py", "demo", "--jobs", "20", "--producers", "1", "--consumers", "1", "--port", port]
    with (tmp_path / "stderr").open("w+") as stderr:  # a file: never a full pipe that stops the demo
        demo = subprocess.Popen(args, cwd=ROOT, env=child_env, stdout=subprocess.PIPE, stderr=stderr, text=True)
        # Whatever happens, the demo is killed within two minutes, which ends the reading.
        watchdog = threading.Timer(120, demo.kill)
        watchdog.start()
        try:
            assert demo.stdout is not None
            served = any(line.startswith("The admin: ") for line in demo.stdout)  # stops at the first
            demo.send_signal(signal.SIGTERM)
            demo.communicate(timeout=60)
        finally:
            watchdog.cancel()
            demo.kill()
            demo.communicate()
        stderr.seek(0)
        errors = stderr.read()
    assert served, errors
    assert "leaked semaphore" not in errors, errors
