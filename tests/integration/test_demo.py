"""``manage.py demo`` end to end: its producer and consumer processes, then a real
``runworkers`` for the failed jobs it leaves in the admin."""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import re
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import TypeVar

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from django_sqlqueue.models import Job, JobStatus
from tests.support.ports import free_port
from tests.support.workers import FAST_CLOCKS, ROOT


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


T = TypeVar("T")


def until(found: Callable[[], T | None], seconds: float, what: str) -> T:
    """``found()`` once it is truthy, polled for at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while not (value := found()):
        assert time.monotonic() < deadline, f"no {what} within {seconds} s"
        time.sleep(0.2)
    return value


def processes_marked(marker: str) -> list[int]:
    """The live processes whose environment holds ``marker``: the demo's and every
    process it started, however deep, and only those."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "environ").read_bytes():
                pids.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            pass
    return pids


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_the_served_demo_runs_the_job_its_form_enqueues_then_stops_its_workers(
    child_env: dict[str, str], python: str, tmp_path: Path, stop: signal.Signals
) -> None:
    """As a user: start ``manage.py demo``, post its form, watch the job succeed, stop the
    demo; its ``runworkers`` and that one's worker processes are gone with it."""
    port = free_port()
    marker = f"SQLQUEUE_DEMO_TEST={uuid.uuid4()}"
    env = {**child_env, **FAST_CLOCKS, **dict([marker.split("=")])}
    args = [python, "manage.py", "demo", "--jobs", "10", "--producers", "1", "--consumers", "1", "--port", str(port)]
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        demo = subprocess.Popen(args, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
    try:
        workers = until(lambda: re.search(r"runworkers \(pid (\d+)\)", out.read_text()), 120, "workers").group(1)
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        base = f"http://127.0.0.1:{port}"

        def page(path: str, data: dict[str, str] | None = None) -> str:
            body = None if data is None else urllib.parse.urlencode(data).encode()
            with browser.open(base + path, body, timeout=10) as response:
                return f"{response.url}\n{response.read().decode()}"

        def served() -> str | None:
            try:
                return page("/")
            except OSError:
                return None

        form = until(served, 30, "page")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert token, form
        job = page("/", {"csrfmiddlewaretoken": token.group(1), "a": "4", "b": "5"})  # redirected to the job
        path = re.match(r"http://[^/]+(/jobs/\d+/)", job)
        assert path, job
        done = until(lambda: (shown := page(path.group(1))) * ("Successful" in shown), 60, "success")
        assert "Result: <code>9</code>" in done
        demo.send_signal(stop)
        assert demo.wait(timeout=60) == 0, err.read_text()
    finally:
        if demo.poll() is None:  # failed on the way: stopped as a user would, then for good
            demo.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                demo.wait(timeout=30)
            demo.kill()
            demo.wait()
        # Its resource trackers see their parents' pipes close a moment after they exit.
        deadline = time.monotonic() + 10
        while (left := processes_marked(marker)) and time.monotonic() < deadline:
            time.sleep(0.2)
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert not left, (commands, workers, out.read_text())
