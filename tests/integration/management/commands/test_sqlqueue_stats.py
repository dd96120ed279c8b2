"""``manage.py sqlqueue_stats`` in its own process: against real workers, and watching until
Ctrl-C (a database that is down: ``tests/integration/management/test_base.py``)."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable

from django.db.models import Sum

from django_sqlqueue.models import Job, JobStatus, Worker
from tests.support.workers import ROOT, Workers, wait_until
from tests.testapp.tasks import add

JOBS = 300


def command(python: str, *args: str) -> list[str]:
    return [python, "manage.py", "sqlqueue_stats", *args]


def run(env: dict[str, str], python: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(python, *args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_real_workers_record_their_counters(
    start_workers: Callable[..., Workers], child_env: dict[str, str], python: str
) -> None:
    Job.objects.enqueue_many(Job.objects.build(add, (n, n)) for n in range(JOBS))
    # Small batches from two processes: on MySQL/MariaDB their claims meet on the same candidates.
    workers = start_workers("--processes", "2", "--batch-size", "2")
    wait_until(lambda: not Job.objects.exclude(status=JobStatus.SUCCESSFUL).exists(), timeout=120, why=workers.text)
    # The counters reach the Worker rows with the next heartbeat.
    wait_until(
        lambda: Worker.objects.aggregate(total=Sum("jobs_succeeded"))["total"] == JOBS, timeout=30, why=workers.text
    )
    result = run(child_env, python, "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    [queue] = figures["queues"]
    assert (queue["queue"], queue["counts"]["SUCCESSFUL"], queue["finished_last_hour"]) == ("default", JOBS, JOBS)
    assert len(figures["workers"]) == 2
    assert sum(worker["jobs_succeeded"] for worker in figures["workers"]) == JOBS
    lost = [worker["candidates_lost"] for worker in figures["workers"]]
    assert figures["candidates_lost"] == sum(lost) >= 0
    assert list(Worker.objects.order_by("name").values_list("candidates_lost", flat=True)) == lost
    tables = run(child_env, python)
    assert tables.returncode == 0, tables.stderr
    assert f"2 live worker(s); candidates lost to other workers: {sum(lost)}" in tables.stdout
    assert workers.stop() == 0


def test_watch_prints_frames_a_blank_line_apart_until_ctrl_c(child_env: dict[str, str], python: str) -> None:
    watching = subprocess.Popen(
        command(python, "--watch", "0.1"),
        cwd=ROOT,
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watching.stdout is not None
    try:
        seen = []
        for line in watching.stdout:
            seen.append(line)
            if sum(line.startswith("sqlqueue at ") for line in seen) == 3:
                break
        watching.send_signal(signal.SIGINT)
        rest, errors = watching.communicate(timeout=30)
    finally:
        watching.kill()
        watching.communicate()
    assert (watching.returncode, errors) == (0, "")
    # Not a terminal: every frame in full, the next after a blank line (the last may be cut short).
    frames = "".join([*seen, rest]).split("sqlqueue at ")[1:]
    assert len(frames) >= 3
    assert all(
        frame.endswith("\n\nNo jobs.\n\n0 live worker(s); candidates lost to other workers: 0\n\n")
        for frame in frames[:-1]
    )
