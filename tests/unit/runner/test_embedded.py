"""When a web process starts its embedded workers, and when it does not; what they run
and how they stop. In the test process, on threads: the real servers are
``tests/integration/runner/test_embedded.py``'s."""

from __future__ import annotations

import datetime
import logging
import os
import socket
import warnings
from collections.abc import Iterator

import pytest
from django.core import mail
from django.db import DEFAULT_DB_ALIAS
from django.test import Client, override_settings

from django_sqlqueue.db import leadership
from django_sqlqueue.models import Job, JobStatus, Leader, Worker
from django_sqlqueue.runner import embedded
from django_sqlqueue.runner.worker import WorkerProcess
from tests.support.workers import wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import add, sleep_once_started

pytestmark = pytest.mark.django_db(transaction=True)  # the workers' threads read what the test commits


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process as if it had served no request yet; its workers stopped after the test."""
    monkeypatch.setattr(embedded, "_process", embedded._Process())
    yield
    embedded.stop()


@pytest.fixture
def serving(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that serves requests: not under the tests."""
    monkeypatch.delattr(mail, "outbox")


@override_settings(SQLQUEUE_EMBEDDED={})
def test_the_test_clients_requests_start_nothing() -> None:
    Client().get("/no-such-page/")
    assert embedded._process.decided
    assert embedded._process.workers is None
    assert not Worker.objects.exists()


@pytest.mark.usefixtures("serving")
def test_nothing_starts_when_the_setting_is_none() -> None:
    assert embedded.start() is None
    assert not Worker.objects.exists()


@pytest.mark.usefixtures("serving")
@override_settings(SQLQUEUE_EMBEDDED={"threads": 0})
def test_a_bad_setting_starts_nothing_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="django_sqlqueue.runner.embedded"):
        assert embedded.start() is None
    assert caplog.messages == [
        "No embedded workers: SQLQUEUE_EMBEDDED: 'threads' must be an integer from 1 to 32, not 0."
    ]


@pytest.mark.usefixtures("serving")
@override_settings(SQLQUEUE_EMBEDDED={"queues": ["default"], "threads": 2})
def test_the_first_request_starts_them_once_and_they_run_jobs_then_stop_cleanly(admin_client: Client) -> None:
    Client().get("/no-such-page/")
    workers = embedded._process.workers
    assert workers is not None
    Client().get("/no-such-page/")
    assert embedded.start() is workers
    prefix = f"embedded:{socket.gethostname()}:{os.getpid()}:1:"
    assert workers.name.startswith(prefix)
    row = wait_until(lambda: Worker.objects.filter(name=workers.name).first(), timeout=30)
    assert (row.host, row.pid, row.queues) == (socket.gethostname(), os.getpid(), ["default"])

    job = Job.objects.enqueue(add, (1, 2))
    wait_until(lambda: Job.objects.filter(pk=job.pk, status=JobStatus.SUCCESSFUL).exists(), timeout=30)
    job.refresh_from_db()
    assert (job.result, job.worker) == (3, workers.name)
    # The only holder around takes the maintenance lease.
    wait_until(lambda: Leader.objects.filter(holder=workers.maintenance.holder).exists(), timeout=30)
    # The admin's workers page lists it, under the maintenance's holder.
    listed = admin_client.get("/admin/django_sqlqueue/worker/").context["cl"].result_list
    assert [(worker.name, worker.leads) for worker in listed] == [(workers.name, True)]

    embedded.stop()
    assert not any(thread.is_alive() for thread in workers.threads)
    assert not Worker.objects.exists()
    assert leadership.acquire("next:1", datetime.timedelta(seconds=60), DEFAULT_DB_ALIAS)
    # Stopped for good: a later request does not start them again.
    Client().get("/no-such-page/")
    assert embedded.start() is workers


def test_a_forked_child_forgets_the_parents_workers() -> None:
    embedded._process.decided = True
    embedded._process.workers = object()  # type: ignore[assignment]  # what the child must not see
    reader, writer = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the test process has threads of its own
        pid = os.fork()
    if pid == 0:  # the child
        forgotten = not embedded._process.decided and embedded._process.workers is None
        os.write(writer, b"1" if forgotten else b"0")
        os._exit(0)
    os.close(writer)
    told = os.read(reader, 1)
    os.close(reader)
    os.waitpid(pid, 0)
    assert told == b"1"
    assert embedded._process.decided  # the parent keeps its own
    embedded._process.workers = None


@pytest.mark.usefixtures("serving")
@override_settings(SQLQUEUE_EMBEDDED={})
def test_a_worker_stopped_by_an_error_says_so_and_the_process_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: WorkerProcess) -> None:
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(WorkerProcess, "run", broken)
    with caplog.at_level(logging.ERROR, logger="django_sqlqueue.runner.embedded"):
        workers = embedded.start()
        assert workers is not None
        workers.threads[0].join(30)
    [record] = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert (
        record.getMessage()
        == f"{workers.name}: the embedded worker stopped on an error; this process runs no more jobs"
    )
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "broken on purpose"
    assert Client().get("/no-such-page/").status_code == 404


@pytest.mark.usefixtures("serving")
@override_settings(SQLQUEUE_EMBEDDED={}, SQLQUEUE_SHUTDOWN_GRACE=0.5)
def test_a_job_running_past_the_grace_is_left_running_and_finishes_its_own_way(
    caplog: pytest.LogCaptureFixture,
) -> None:
    workers = embedded.start()
    assert workers is not None
    job = Job.objects.enqueue(sleep_once_started, ("slow", 3))
    # Started, not merely claimed: a stopping worker gives back the jobs it has not started.
    wait_until(lambda: Receipt.objects.filter(token="slow").exists(), timeout=30)
    with caplog.at_level(logging.WARNING, logger="django_sqlqueue.runner.embedded"):
        embedded.stop()
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == [
        f"{workers.name}: jobs still ran after SQLQUEUE_SHUTDOWN_GRACE; the process exits, and they are rescued "
        "after SQLQUEUE_LEASE"
    ]
    # Here the process lives on: the job ends, its outcome is written, the worker unregisters.
    workers.threads[0].join(30)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCESSFUL
    assert not Worker.objects.exists()
