"""The ``runworkers`` supervisor as real processes on the test's database: chaos,
signals, timeouts, poison jobs and a database that drops its connections."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import time
from collections import Counter
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models import Count

from django_sqlqueue.models import Job, JobStatus, Worker
from tests.support.workers import Workers, children_of, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import (
    add,
    crash,
    crash_once,
    fail,
    hang_once_exists,
    record,
    sleep,
    sleep_first_time,
    sleep_once_started,
    spawn_sleeper,
)

pytestmark = pytest.mark.slow

StartWorkers = Callable[..., Workers]

WORKER_LOST = "django_sqlqueue.exceptions.WorkerLost"
JOB_TIMEOUT = "django_sqlqueue.exceptions.JobTimeout"


def statuses() -> dict[str, int]:
    return dict(Job.objects.order_by().values_list("status").annotate(count=Count("id")))


def unfinished() -> bool:
    return Job.objects.filter(status__in=[JobStatus.READY, JobStatus.RUNNING]).exists()


def error_classes(job: Job) -> list[str]:
    return [error["exception_class_path"] for error in job.errors]


def enqueue_records(count: int, pause: float) -> list[Job]:
    jobs = (Job.objects.build(record, (f"token-{n}",), {"pause": pause}, max_attempts=20) for n in range(count))
    return Job.objects.enqueue_many(jobs)


def assert_side_effects_once_unless_rescued(count: int) -> dict[str, int]:
    """Every token has its one receipt; a token that ran more than once belongs to a job
    with as many lost attempts (its worker died after the side effect, before the outcome)."""
    runs = dict(Receipt.objects.values_list("token", "runs"))
    assert sorted(runs) == sorted(f"token-{n}" for n in range(count))
    failed_attempts = {job.args[0]: len(job.errors) for job in Job.objects.only("args", "errors")}
    repeated = {token: times for token, times in runs.items() if times > 1}
    assert {token: times for token, times in repeated.items() if times - 1 > failed_attempts[token]} == {}
    return repeated


def test_chaos_kill_9_a_worker_every_second_loses_nothing(start_workers: StartWorkers) -> None:
    count = 2000
    enqueue_records(count, pause=0.02)
    workers = start_workers("--processes", "4", "--threads", "2")
    kills = 0
    deadline = time.monotonic() + 300
    while unfinished():
        assert time.monotonic() < deadline, f"{statuses()} after {kills} kills:\n{workers.text()}"
        if pids := children_of(workers.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(random.choice(pids), signal.SIGKILL)
                kills += 1
        time.sleep(1)
    assert workers.stop() == 0, workers.text()

    assert statuses() == {JobStatus.SUCCESSFUL: count}
    repeated = assert_side_effects_once_unless_rescued(count)
    rescued = [job for job in Job.objects.all() if WORKER_LOST in error_classes(job)]
    print(f"chaos: {kills} workers killed, {len(rescued)} jobs rescued, {len(repeated)} side effects repeated")
    assert kills >= 3
    assert rescued, "no kill ever hit a job: the chaos test tested nothing"
    assert not Worker.objects.exists()


def _with_one_crash(count: int, at: int) -> None:
    """``count`` jobs that record their runs, the one at ``at`` killing its worker process
    the first time it runs (``crash_once``)."""
    Job.objects.enqueue_many(
        Job.objects.build(crash_once, (f"token-{n}",)) if n == at else Job.objects.build(record, (f"token-{n}",))
        for n in range(count)
    )


def _rescued(workers: Workers) -> int:
    rescued = re.search(r"Rescued (\d+) job\(s\) from worker", workers.text())
    assert rescued, workers.text()
    return int(rescued[1])


def test_max_jobs_counts_the_jobs_finished_not_the_jobs_a_crash_gave_back(start_workers: StartWorkers) -> None:
    """Issue 36: the claimed jobs a crashed process had not started went back to
    ``READY`` uncounted, but stayed charged to ``--max-jobs``, which ended the run early."""
    # Batches grow 1, 2, 4, 8: the crash comes first in the third, with three jobs behind it.
    _with_one_crash(40, at=3)
    workers = start_workers("--processes", "1", "--threads", "1", "--batch-size", "8", "--max-jobs", "20")
    assert workers.wait(60) == 0, workers.text()
    assert _rescued(workers) > 1, "the crash gave no unstarted job back: the test tested nothing"
    assert statuses() == {JobStatus.SUCCESSFUL: 20, JobStatus.READY: 20}
    # 20 jobs finished and the crashed attempt (its receipt counts its run), whether or
    # not the crashed job's retry came among them.
    assert sum(Job.objects.values_list("attempts", flat=True)) == 21, statuses()
    assert sum(Receipt.objects.values_list("runs", flat=True)) == 21


def test_max_jobs_counts_no_attempt_a_crash_charged_to_jobs_that_will_run_again(start_workers: StartWorkers) -> None:
    """The jobs of the crashed process's batch that had run before the crash, their
    outcomes not yet written, are charged ``WorkerLost`` by the rescue and run again: they
    give their share of ``--max-jobs`` back, so the run does not end jobs short."""
    # Batches grow 1, 2, 4, 8, 16 (quick jobs): the crash ends the fifth, after 15 that ran.
    _with_one_crash(70, at=30)
    workers = start_workers("--processes", "1", "--max-jobs", "50")
    assert workers.wait(120) == 0, workers.text()
    assert _rescued(workers) > 1, "the crash came before any other job of its batch ran: the test tested nothing"
    assert statuses() == {JobStatus.SUCCESSFUL: 50, JobStatus.READY: 20}, workers.text()


def test_the_status_line_counts_the_jobs_by_the_status_written_as_sqlqueue_stats_does(
    start_workers: StartWorkers,
) -> None:
    """Issue 36: the status line said ``done`` for attempts and ``failed`` for the failed
    attempts its processes recorded: a job retried counted twice, and a job a rescue
    ended FAILED not at all."""
    Job.objects.enqueue_many(Job.objects.build(add, (n, n)) for n in range(3))
    Job.objects.enqueue(fail, ("always",), max_attempts=3)
    Job.objects.enqueue(crash, max_attempts=1)
    # 3 + 1 + 1 jobs: the run ends once the last one has finished.
    workers = start_workers("--processes", "1", "--max-jobs", "5")
    assert workers.wait(60) == 0, workers.text()
    line = re.search(
        r"jobs succeeded (\d+), failed (\d+), cancelled (\d+) \(\d+/s\); failed attempts to retry (\d+), snoozed \d+; "
        r"jobs rescued (\d+), ready 0; processes 0$",
        workers.text(),
        re.M,
    )
    assert line, workers.text()
    succeeded, failed, cancelled, retried, rescued = (int(figure) for figure in line.groups())
    assert (succeeded, failed, cancelled, retried) == (3, 2, 0, 2)
    assert rescued >= 1  # the crashed job, and any claimed with it that had not started
    out = StringIO()
    call_command("sqlqueue_stats", "--json", stdout=out)
    counts = Counter[str]()
    for queue in json.loads(out.getvalue())["queues"]:
        counts.update(queue["counts"])
    figures = [counts[JobStatus.SUCCESSFUL], counts[JobStatus.FAILED], counts[JobStatus.CANCELLED]]
    assert [succeeded, failed, cancelled] == figures


def test_sigterm_lets_a_running_job_finish(start_workers: StartWorkers) -> None:
    slow = Job.objects.enqueue(sleep_once_started, ("slow", 3))
    workers = start_workers("--processes", "1")
    wait_until(lambda: Receipt.objects.filter(token="slow").exists(), timeout=60)
    workers.signal(signal.SIGTERM)
    assert workers.wait(30) == 0, workers.text()
    slow.refresh_from_db()
    assert (slow.status, slow.result, slow.attempts, slow.errors) == (JobStatus.SUCCESSFUL, 3, 1, [])
    assert "Stopping: running jobs have 10 s to finish" in workers.text()
    assert not Worker.objects.exists()


def test_sigterm_gives_claimed_unstarted_jobs_back_at_once(start_workers: StartWorkers) -> None:
    Job.objects.enqueue_many(Job.objects.build(sleep, (0.05,)) for _ in range(400))
    workers = start_workers("--processes", "1")
    # By now the worker claims batches of about a second's work (20 of these jobs).
    wait_until(lambda: Job.objects.filter(status=JobStatus.SUCCESSFUL).count() >= 60, timeout=60)
    workers.signal(signal.SIGTERM)
    began = time.monotonic()
    assert workers.wait(30) == 0, workers.text()
    assert time.monotonic() - began < 5
    counts = statuses()
    assert set(counts) == {JobStatus.SUCCESSFUL, JobStatus.READY}
    assert not Job.objects.filter(status=JobStatus.READY).exclude(attempts=0).exists()
    assert not Job.objects.filter(status=JobStatus.SUCCESSFUL).exclude(attempts=1).exists()


def test_grace_period_running_out_fails_the_attempt_and_retries_it(start_workers: StartWorkers) -> None:
    slow = Job.objects.enqueue(sleep_once_started, ("slow", 60))
    workers = start_workers("--processes", "1", SQLQUEUE_SHUTDOWN_GRACE="1")
    wait_until(lambda: Receipt.objects.filter(token="slow").exists(), timeout=60)
    workers.signal(signal.SIGTERM)
    assert workers.wait(30) == 0, workers.text()
    slow.refresh_from_db()
    assert (slow.status, slow.attempts, error_classes(slow)) == (JobStatus.READY, 1, [WORKER_LOST])


def test_second_signal_exits_at_once_and_a_later_supervisor_rescues(start_workers: StartWorkers) -> None:
    slow = Job.objects.enqueue(sleep_once_started, ("slow", 60), max_attempts=1)
    first = start_workers("--processes", "1")
    wait_until(lambda: Receipt.objects.filter(token="slow").exists(), timeout=60)
    first.signal(signal.SIGTERM)
    time.sleep(0.5)
    first.signal(signal.SIGTERM)
    assert first.wait(5) == 1, first.text()
    slow.refresh_from_db()
    assert slow.status == JobStatus.RUNNING  # nobody gave it back: its lease will

    second = start_workers("--processes", "1")
    wait_until(lambda: Job.objects.filter(pk=slow.pk, status=JobStatus.FAILED).exists(), timeout=60)
    assert second.stop() == 0, second.text()
    slow.refresh_from_db()
    assert error_classes(slow) == [WORKER_LOST]
    assert "sent no heartbeat" in slow.errors[0]["message"]


def test_timeout_kills_the_process_and_retries_the_job(start_workers: StartWorkers) -> None:
    stuck = Job.objects.enqueue(sleep, (60,), timeout=1, max_attempts=2)
    others = Job.objects.enqueue_many(Job.objects.build(add, (n, 1)) for n in range(50))
    workers = start_workers("--processes", "1")
    wait_until(lambda: not unfinished(), timeout=90, why=lambda: f"{statuses()}\n{workers.text()}")
    assert workers.stop() == 0, workers.text()
    stuck.refresh_from_db()
    assert (stuck.status, stuck.attempts, error_classes(stuck)) == (JobStatus.FAILED, 2, [JOB_TIMEOUT] * 2)
    assert "timed out after 1 s" in stuck.errors[0]["message"]
    results = dict(Job.objects.filter(pk__in=[job.pk for job in others]).values_list("pk", "result"))
    assert results == {job.pk: job.args[0] + 1 for job in others}


def test_a_timeout_charges_only_its_own_job_not_the_others_its_process_ran(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    marker = str(tmp_path / "innocent-started")
    stuck = Job.objects.enqueue(hang_once_exists, (marker,), timeout=2, max_attempts=1)
    # Claimed with the stuck job, in one batch of one job a thread; runs long the first time only.
    innocent = Job.objects.enqueue(sleep_first_time, (marker, 60), max_attempts=3)
    workers = start_workers("--processes", "1", "--threads", "2", "--burst")
    assert workers.wait(90) == 0, workers.text()
    innocent.refresh_from_db()
    # It was interrupted (its second run found the marker and returned False), uncounted.
    assert (innocent.status, innocent.result, innocent.attempts, innocent.errors) == (
        JobStatus.SUCCESSFUL,
        False,
        1,
        [],
    )
    assert f"Jobs [{innocent.pk}] were interrupted" in workers.text()
    stuck.refresh_from_db()
    assert (stuck.status, stuck.attempts, error_classes(stuck)) == (JobStatus.FAILED, 1, [JOB_TIMEOUT])
    assert "timed out after 2 s" in stuck.errors[0]["message"]


def running_sleeper(pid_file: Path) -> int | None:
    """The pid of the ``sleep 3600`` a task started, while it runs (a zombie has ended)."""
    pid = int(pid_file.read_text())
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return pid if command == b"sleep\x003600\x00" else None


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads processes from Linux's /proc")
@pytest.mark.parametrize(
    ("seconds", "timeout"), [(0, None), (60, 1)], ids=["the-worker-exits", "the-worker-is-killed-for-a-timeout"]
)
def test_a_task_child_does_not_outlive_its_worker_process(
    start_workers: StartWorkers, tmp_path: Path, seconds: float, timeout: float | None
) -> None:
    pid_file = tmp_path / "sleeper.pid"
    Job.objects.enqueue(spawn_sleeper, (str(pid_file), seconds), timeout=timeout, max_attempts=1)
    workers = start_workers("--processes", "1", "--burst")
    try:
        assert workers.wait(60) == 0, workers.text()
        assert statuses() == {JobStatus.SUCCESSFUL if timeout is None else JobStatus.FAILED: 1}
        wait_until(lambda: not running_sleeper(pid_file), timeout=10, why=lambda: "the task's child still runs")
    finally:
        if pid := running_sleeper(pid_file):
            os.kill(pid, signal.SIGKILL)


def test_poison_job_fails_after_max_attempts_while_others_flow(start_workers: StartWorkers) -> None:
    poison = Job.objects.enqueue(crash)
    others = Job.objects.enqueue_many(Job.objects.build(add, (n, 2)) for n in range(300))
    workers = start_workers("--processes", "2")
    wait_until(lambda: not unfinished(), timeout=90, why=lambda: f"{statuses()}\n{workers.text()}")
    assert workers.stop() == 0, workers.text()
    poison.refresh_from_db()
    assert (poison.status, poison.attempts, error_classes(poison)) == (JobStatus.FAILED, 2, [WORKER_LOST] * 2)
    assert "exited with status 3" in poison.errors[0]["message"]
    assert statuses() == {JobStatus.FAILED: 1, JobStatus.SUCCESSFUL: len(others)}


def kill_other_connections() -> int:
    """End every other session on the test database, as a server restart or a DBA would."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return int(cursor.fetchone()[0])
        cursor.execute("SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID()")
        killed = 0
        for (session,) in cursor.fetchall():
            with contextlib.suppress(Exception):  # it may have ended meanwhile
                cursor.execute(f"KILL CONNECTION {int(session)}")
                killed += 1
        return killed


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite is a file: there is no server connection to kill")
def test_connections_killed_mid_run_recover(start_workers: StartWorkers) -> None:
    count = 1500
    enqueue_records(count, pause=0.005)
    workers = start_workers("--processes", "2", "--threads", "2")
    wait_until(lambda: Job.objects.filter(status=JobStatus.SUCCESSFUL).exists(), timeout=60)
    killed = []
    for _ in range(5):  # a second apart, while the workers claim, run and finish
        killed.append(kill_other_connections())
        time.sleep(1)
    wait_until(lambda: not unfinished(), timeout=120, why=lambda: f"{statuses()}:\n{workers.text()}")
    assert workers.stop() == 0, workers.text()
    assert statuses() == {JobStatus.SUCCESSFUL: count}
    assert_side_effects_once_unless_rescued(count)
    assert sum(killed) >= 3
    # Each kill hit a claim (waited out and retried) or a batch's outcomes (written again,
    # one job at a time), or both: whichever it was, the worker said so.
    assert "database error" in workers.text() or "writing them one job at a time" in workers.text()
