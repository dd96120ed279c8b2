"""``manage.py runworkers`` run for real: its output, its options at work, and runs to
completion (what it refuses before starting is in ``tests/unit/management/commands/``)."""

from __future__ import annotations

import datetime
import logging
import os
import pty
import re
import subprocess
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from django_sqlqueue.models import Job, JobStatus, Worker
from django_sqlqueue.runner import supervisor
from django_sqlqueue.runner.naming import longest_prefix
from tests.support.workers import FAST_CLOCKS, ROOT, Workers
from tests.testapp.tasks import add, send_welcome, sleep

StartWorkers = Callable[..., Workers]


def test_burst_drains_what_is_ready_and_exits(start_workers: StartWorkers) -> None:
    jobs = Job.objects.enqueue_many(Job.objects.build(add, (n, n)) for n in range(200))
    later = Job.objects.enqueue(add, (1, 1), delay=3600)
    workers = start_workers("--burst", "--processes", "2", "--name", "ci-")
    assert workers.wait(60) == 0, workers.text()
    results = dict(Job.objects.exclude(pk=later.pk).values_list("pk", "result"))
    assert results == {job.pk: 2 * job.args[0] for job in jobs}
    assert set(Job.objects.exclude(pk=later.pk).values_list("status", flat=True)) == {JobStatus.SUCCESSFUL}
    assert Job.objects.get(pk=later.pk).status == JobStatus.READY
    assert all(name.startswith("ci-") for name in Job.objects.values_list("worker", flat=True).exclude(worker=""))
    lines = workers.text().splitlines()
    vendor = connection.vendor
    assert lines[0].startswith(
        "runworkers: 2 process(es) x 1 thread(s) on all queues, batches of 100 (burst: until the queue is empty); "
        f"database {vendor} "
    )
    assert re.search(
        r"jobs succeeded 200, failed 0, cancelled 0 \(\d+/s\); failed attempts to retry 0, snoozed 0; "
        r"jobs rescued 0, ready 0; processes 0$",
        lines[-1],
    ), lines
    assert not Worker.objects.exists()


def test_the_longest_name_prefix_accepted_runs_jobs(start_workers: StartWorkers) -> None:
    job = Job.objects.enqueue(add, (2, 3))
    prefix = "p" * longest_prefix()
    workers = start_workers("--burst", "--processes", "2", "--name", prefix)
    assert workers.wait(60) == 0, workers.text()
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.SUCCESSFUL, 5)
    assert job.worker.startswith(prefix)


def test_queues_option_runs_only_those_queues(start_workers: StartWorkers) -> None:
    mail = Job.objects.enqueue(send_welcome, (1,))
    default = Job.objects.enqueue(add, (1, 2))
    workers = start_workers("--burst", "--processes", "1", "--queues", "mail")
    assert workers.wait(60) == 0, workers.text()
    assert Job.objects.get(pk=mail.pk).status == JobStatus.SUCCESSFUL
    assert Job.objects.get(pk=default.pk).status == JobStatus.READY
    assert "on mail," in workers.text()


def test_max_jobs_stops_after_that_many_across_processes(start_workers: StartWorkers) -> None:
    Job.objects.enqueue_many(Job.objects.build(add, (n, 1)) for n in range(100))
    workers = start_workers("--max-jobs", "30", "--processes", "2")
    assert workers.wait(60) == 0, workers.text()
    assert Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == 30
    assert Job.objects.filter(status=JobStatus.READY, attempts=0).count() == 70


def test_threads_run_jobs_side_by_side(start_workers: StartWorkers) -> None:
    jobs = Job.objects.enqueue_many(Job.objects.build(sleep, (1,)) for _ in range(4))
    workers = start_workers("--burst", "--processes", "1", "--threads", "4")
    assert workers.wait(60) == 0, workers.text()
    # One claim took all four, and they ended together, where one thread would have
    # ended them a second apart.
    assert len(set(Job.objects.values_list("started_at", flat=True))) == 1
    ends = sorted(end for end in Job.objects.values_list("finished_at", flat=True) if end is not None)
    assert len(ends) == len(jobs)
    assert ends[-1] - ends[0] < datetime.timedelta(seconds=0.5), ends
    assert Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == len(jobs)


def test_debug_on_is_warned_about(start_workers: StartWorkers) -> None:
    debug = start_workers("--burst", "--processes", "1", DJANGO_DEBUG="1")
    assert debug.wait(60) == 0, debug.text()
    assert "DEBUG is on" in debug.text()
    quiet = start_workers("--burst", "--processes", "1", DJANGO_DEBUG="0")
    assert quiet.wait(60) == 0, quiet.text()
    assert "DEBUG is on" not in quiet.text()


@pytest.mark.parametrize(("setting", "method"), [({}, "fork"), ({"SQLQUEUE_WORKER_START": "spawn"}, "spawn")])
def test_verbosity_2_logs_each_worker_process_and_how_it_started(
    start_workers: StartWorkers, setting: dict[str, str], method: str
) -> None:
    Job.objects.enqueue_many(Job.objects.build(add, (n, 1)) for n in range(4))
    workers = start_workers("--burst", "--processes", "2", "-v", "2", **setting)
    assert workers.wait(60) == 0, workers.text()
    assert len(re.findall(rf"Started worker \S+ \(pid \d+, {method}\)", workers.text())) == 2, workers.text()
    assert sorted(Job.objects.values_list("status", "result")) == [("SUCCESSFUL", n + 1) for n in range(4)]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_every_process_runs_its_exit_functions(start_workers: StartWorkers, tmp_path: Path, method: str) -> None:
    """The supervisor run from the command line and a forked process end with
    ``os._exit()``, after the ``atexit`` functions that flush logs and exporters: in a
    worker process, those registered there (``tests.support.exit_hooks``)."""
    Job.objects.enqueue_many(Job.objects.build(add, (n, 1)) for n in range(4))
    said = tmp_path / "atexit.txt"
    workers = start_workers(
        "--burst",
        "--processes",
        "2",
        "-v",
        "2",
        DJANGO_SETTINGS_MODULE="tests.support.settings_extra_apps",
        SQLQUEUE_TEST_EXTRA_APPS="tests.support.exit_hooks",
        SQLQUEUE_TEST_ATEXIT_FILE=str(said),
        SQLQUEUE_MIDDLEWARE='["tests.support.exit_hooks.middleware"]',
        SQLQUEUE_WORKER_START=method,
    )
    assert workers.wait(60) == 0, workers.text()
    children = {int(pid) for pid in re.findall(rf"Started worker \S+ \(pid (\d+), {method}\)", workers.text())}
    assert len(children) == 2, workers.text()
    assert set(map(int, said.read_text().split())) == {workers.process.pid, *children}
    assert "jobs succeeded 4" in workers.text()  # the last line, written before the exit


def test_burst_on_a_terminal_shows_a_progress_bar(child_env: dict[str, str], python: str) -> None:
    Job.objects.enqueue_many(Job.objects.build(add, (n, 0)) for n in range(50))
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [python, "manage.py", "runworkers", "--burst", "--processes", "1"],
        cwd=ROOT,
        env={**child_env, **FAST_CLOCKS},
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    output = b""
    try:
        while chunk := _read(controller):
            output += chunk
    finally:
        os.close(controller)
        assert process.wait(60) == 0, output
    text = output.decode()
    assert "[##############################] 50/50 jobs" in text, text
    assert Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == 50


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # the terminal closed: the command exited
        return b""


@pytest.mark.django_db(transaction=True)
def test_long_runs_print_a_status_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor, "STATUS_SECONDS", 0.3)
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))  # for the worker processes
    Job.objects.enqueue_many(Job.objects.build(sleep, (0.2,)) for _ in range(8))
    out = StringIO()
    call_command("runworkers", max_jobs=8, processes=1, stdout=out)
    statuses = re.findall(
        r"^\d\d:\d\d:\d\d jobs succeeded (\d+), failed 0, cancelled 0 \(\d+/s\); "
        r"failed attempts to retry 0, snoozed 0; jobs rescued 0, ready (\d+)",
        out.getvalue(),
        re.M,
    )
    assert len(statuses) >= 3, out.getvalue()
    assert statuses[-1] == ("8", "0")
    assert Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == 8


@pytest.mark.django_db(transaction=True)
def test_run_in_process_it_leaves_the_project_s_logging_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """``call_command("runworkers", ...)`` from a test or a script: its ``-v 3`` and JSON
    logs are its own, not the caller's afterwards."""
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))  # for the worker processes
    ours, root = logging.getLogger("django_sqlqueue"), logging.getLogger()
    console = logging.StreamHandler()  # stderr
    root.addHandler(console)
    level, handlers = ours.level, list(ours.handlers)
    try:
        Job.objects.enqueue(add, args=(1, 2))
        call_command("runworkers", burst=True, processes=1, verbosity=3, log_format="json", stdout=StringIO())
    finally:
        root.removeHandler(console)
    assert Job.objects.get().status == JobStatus.SUCCESSFUL
    assert (ours.level, ours.handlers, console.formatter) == (level, handlers, None)
