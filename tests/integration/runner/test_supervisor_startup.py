"""runworkers against a broken deployment: it stops with the reason, never respawns
processes in a loop; and a process that exits while a job runs has crashed."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import FAST_CLOCKS, UNGUARDED_MANAGE_PY, Workers, run_script
from tests.testapp.tasks import add, crash, exit_cleanly

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

StartWorkers = Callable[..., Workers]
EXTRA_APPS = {"DJANGO_SETTINGS_MODULE": "tests.support.settings_extra_apps"}


def test_a_tasks_module_that_raises_on_import_stops_runworkers_before_any_process(
    start_workers: StartWorkers,
) -> None:
    Job.objects.enqueue(add, (1, 2))
    workers = start_workers("--burst", **EXTRA_APPS, SQLQUEUE_TEST_EXTRA_APPS="tests.support.brokenapps.on_import")
    assert workers.wait(timeout=60) == 1
    output = workers.text()
    assert (
        "CommandError: Importing tests.support.brokenapps.on_import.tasks failed: "
        "RuntimeError: this tasks module is broken on purpose. No worker could run its tasks"
    ) in output, output
    assert "Started worker" not in output
    assert Job.objects.get().status == JobStatus.READY


def test_processes_that_die_during_start_up_are_retried_with_backoff_then_burst_gives_up(
    start_workers: StartWorkers,
) -> None:
    Job.objects.enqueue(add, (1, 2))
    began = time.monotonic()
    workers = start_workers(
        "--burst",
        "--processes",
        "1",
        "-v",
        "2",
        **EXTRA_APPS,
        SQLQUEUE_TEST_EXTRA_APPS="tests.support.brokenapps.in_workers",
        # A spawned process imports the tasks again, in an environment of its own; a forked
        # one has them already.
        SQLQUEUE_WORKER_START="spawn",
    )
    assert workers.wait(timeout=90) == 1
    took = time.monotonic() - began
    output = workers.text()
    failures = re.findall(r"during start-up \((\d+) in a row\)", output)
    assert failures == ["1", "2", "3", "4", "5"], output
    assert "RuntimeError: cannot start in a worker process" in output
    # Four waits before the five starts: 0.5 + 1 + 2 + 4 seconds, not a tight loop.
    assert took >= 7.5, output
    assert output.count("Started worker") == 5, output
    assert "CommandError: 5 worker processes in a row died young; the last one exited with status 1 (" in output
    assert output.rstrip().endswith("cannot start in a worker process) during start-up."), output
    assert Job.objects.get().status == JobStatus.READY


def test_processes_that_die_soon_after_their_start_are_respawned_with_backoff_then_burst_gives_up(
    start_workers: StartWorkers,
) -> None:
    """Whatever kills them (here each one's first job), processes that die young again
    and again are not respawned in a tight loop, and ``--burst`` ends, saying why."""
    Job.objects.enqueue_many(Job.objects.build(crash, max_attempts=1) for _ in range(8))
    began = time.monotonic()
    workers = start_workers("--burst", "--processes", "1")
    assert workers.wait(timeout=90) == 1
    took = time.monotonic() - began
    output = workers.text()
    waits = re.findall(r"exited with status 3 [\d.]+ s after it started \((\d) in a row\)(.*)", output)
    assert waits == [
        ("1", ": starting another in 0.5 s"),
        ("2", ": starting another in 1 s"),
        ("3", ": starting another in 2 s"),
        ("4", ": starting another in 4 s"),
        ("5", ""),
    ], output
    assert took >= 7.5, output
    assert output.count("Rescued 1 job(s)") == 5, output
    assert "CommandError: 5 worker processes in a row died young; the last one exited with status 3" in output
    assert Job.objects.filter(status=JobStatus.FAILED).count() == 5
    assert Job.objects.filter(status=JobStatus.READY).count() == 3


def test_a_process_that_exits_with_status_0_while_a_job_runs_has_crashed(start_workers: StartWorkers) -> None:
    # First in any batch it is claimed in: a job its batch ran before it, and not yet
    # recorded when the process went, would be charged an attempt and retried later.
    quitter = Job.objects.enqueue(exit_cleanly, priority=10)
    others = Job.objects.enqueue_many(Job.objects.build(add, (n, 1)) for n in range(50))
    workers = start_workers("--burst", "--processes", "1")
    assert workers.wait(timeout=90) == 0, workers.text()
    quitter.refresh_from_db()
    assert (quitter.status, quitter.attempts) == (JobStatus.FAILED, 2)
    assert "exited with status 0 (SystemExit: 0) while the job ran" in quitter.errors[0]["message"]
    done = Job.objects.filter(pk__in=[job.pk for job in others], status=JobStatus.SUCCESSFUL).count()
    assert done == len(others), workers.text()


@pytest.mark.parametrize(
    "script",
    [
        UNGUARDED_MANAGE_PY,
        # A script of the project's own that calls the command.
        "from django.core.management import call_command\ncall_command('runworkers', '--burst', '--processes', '2')\n",
    ],
    ids=["manage.py without a main guard", "a script calling call_command"],
)
def test_workers_start_whatever_launched_runworkers(
    script: str, child_env: dict[str, str], python: str, tmp_path: Path
) -> None:
    """multiprocessing would run an unguarded main module again in every worker process."""
    jobs = Job.objects.enqueue_many(Job.objects.build(add, (n, 1)) for n in range(20))
    finished = run_script(
        python,
        tmp_path / "launch.py",
        f"import django\ndjango.setup()\n{script}",
        *("runworkers", "--burst", "--processes", "2"),
        env={**child_env, **FAST_CLOCKS},
        timeout=120,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stdout.count("runworkers: 2 process(es)") == 1, finished.stdout
    assert Job.objects.filter(pk__in=[job.pk for job in jobs], status=JobStatus.SUCCESSFUL).count() == len(jobs)
