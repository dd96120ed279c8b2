"""Embedded workers under a real forking server: gunicorn's workers each run their own,
after ``--preload`` too; they stop cleanly with the server, and the jobs of one killed
outright are rescued by another process's."""

from __future__ import annotations

import datetime
import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.db import DEFAULT_DB_ALIAS

from django_sqlqueue.db import leadership
from django_sqlqueue.models import Job, JobStatus, Worker
from tests.support.servers import Gunicorn, Runserver
from tests.support.workers import FAST_CLOCKS, KEEP_FINISHED, children_of, end_all, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import sleep_first_time, sleep_once_started, worker_pid

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

StartServer = Callable[..., Gunicorn]
WORKER_LOST = "django_sqlqueue.exceptions.WorkerLost"


@pytest.fixture
def server_env(child_env: dict[str, str]) -> dict[str, str]:
    """A web server's: this test's database, embedded workers of 2 threads, short clocks."""
    return {**child_env, **FAST_CLOCKS, **KEEP_FINISHED, "SQLQUEUE_EMBEDDED": json.dumps({"threads": 2})}


@pytest.fixture
def start_server(server_env: dict[str, str], python: str, tmp_path: Path) -> Iterator[StartServer]:
    """``start_server(workers, *args)``: gunicorn serving the tests' project, answering."""
    started: list[Gunicorn] = []

    def start(workers: int, *args: str) -> Gunicorn:
        server = Gunicorn(workers, list(args), server_env, python, tmp_path / f"gunicorn-{len(started)}.log")
        started.append(server)
        wait_until(server.get, timeout=60, why=server.text)
        return server

    yield start
    end_all(started)


def embedded_rows() -> dict[int, str]:
    """The registered embedded workers' names, by pid."""
    return dict(Worker.objects.filter(name__startswith="embedded:").values_list("pid", "name"))


def test_each_forked_worker_runs_its_own_and_they_stop_cleanly_with_the_server(start_server: StartServer) -> None:
    server = start_server(2, "--preload")

    def both_serving() -> bool:
        with server.one_worker_held():
            server.get()
        return len(embedded_rows()) == 2

    wait_until(both_serving, timeout=60, why=server.text)
    rows = embedded_rows()
    # The forked workers' own, none in the arbiter, which loaded the project before it forked.
    assert set(rows) == set(children_of(server.process.pid)), server.text()
    assert server.process.pid not in rows
    assert all(name.startswith(f"embedded:{Worker.objects.get(pid=pid).host}:{pid}:1:") for pid, name in rows.items())

    jobs = Job.objects.enqueue_many(Job.objects.build(worker_pid) for _ in range(20))
    wait_until(lambda: Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == 20, timeout=60, why=server.text)
    # Each job by the worker of the process it names (the pid its task returned).
    ran = {(job.worker, job.result) for job in Job.objects.filter(pk__in=[job.pk for job in jobs])}
    assert ran <= {(name, pid) for pid, name in rows.items()}, (ran, rows)

    slow = Job.objects.enqueue(sleep_once_started, ("slow", 2))
    # Started, not merely claimed: a stopping worker gives back the jobs it has not started.
    wait_until(lambda: Receipt.objects.filter(token="slow").exists(), timeout=60, why=server.text)
    assert server.stop() == 0, server.text()
    slow.refresh_from_db()
    # Let finish, written, unregistered; the maintenance lease given up.
    assert (slow.status, slow.attempts) == (JobStatus.SUCCESSFUL, 1), server.text()
    assert not Worker.objects.exists(), server.text()
    assert leadership.acquire("next:1", datetime.timedelta(seconds=60), DEFAULT_DB_ALIAS)
    assert "Traceback" not in server.text()


def test_the_jobs_of_a_web_process_killed_outright_are_rescued_and_run_by_another(
    start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(1)
    wait_until(lambda: server.get() and embedded_rows(), timeout=60, why=server.text)
    job = Job.objects.enqueue(sleep_first_time, (str(tmp_path / "started"), 600), max_attempts=2)
    wait_until(lambda: (tmp_path / "started").exists(), timeout=60, why=server.text)
    job.refresh_from_db()
    killed = Worker.objects.get(name=job.worker).pid
    os.kill(killed, signal.SIGKILL)

    # The arbiter forks another web process, whose first request starts its workers.
    def another_serving() -> bool:
        server.get()
        return bool(set(embedded_rows()) - {killed})

    wait_until(another_serving, timeout=60, why=server.text)
    [name] = [name for pid, name in embedded_rows().items() if pid != killed]
    wait_until(lambda: Job.objects.filter(pk=job.pk, status=JobStatus.SUCCESSFUL).exists(), timeout=60, why=server.text)
    job.refresh_from_db()
    assert (job.attempts, job.worker, job.result) == (2, name, False)
    assert [error["exception_class_path"] for error in job.errors] == [WORKER_LOST]
    # The dead one's row was forgotten by the rescue.
    wait_until(lambda: killed not in embedded_rows(), timeout=30)
    assert server.stop() == 0, server.text()


def test_runserver_runs_them_in_the_child_that_serves_not_in_its_autoreloader(
    server_env: dict[str, str], python: str, tmp_path: Path
) -> None:
    server = Runserver(server_env, python, tmp_path / "runserver.log")
    try:
        wait_until(lambda: server.get() and embedded_rows(), timeout=60, why=server.text)
        assert list(embedded_rows()) == children_of(server.process.pid), server.text()
        job = Job.objects.enqueue(worker_pid)
        wait_until(lambda: Job.objects.filter(pk=job.pk, status=JobStatus.SUCCESSFUL).exists(), timeout=60)
        # Ctrl-C, which reaches both: the child stops its workers as it exits.
        os.killpg(server.process.pid, signal.SIGINT)
        server.wait(30)
        assert not Worker.objects.exists(), server.text()
    finally:
        end_all([server])
