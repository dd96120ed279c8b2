"""How an idle worker waits for work (``runner/wakeup.py``): polling that backs off,
PostgreSQL's NOTIFY, or a datagram from an enqueue on this host. A real idle
``runworkers`` is in ``tests/integration/runner/``."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction

from django_sqlqueue.db.engines.postgresql import PostgreSQL
from django_sqlqueue.models import Job
from django_sqlqueue.runner import wakeup
from django_sqlqueue.runner.wakeup import Waiter
from tests.testapp.tasks import noop


class Warnings(logging.Handler):
    """The messages logged to it, on a logger of its own that no test's or project's
    logging configuration reaches (levels, handlers, disabled loggers)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []
        self.logger = logging.Logger("tests.wakeup")
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def warnings(monkeypatch: pytest.MonkeyPatch) -> Warnings:
    recorded = Warnings()
    monkeypatch.setattr(wakeup, "logger", recorded.logger)
    return recorded


class RecordingStop(threading.Event):
    """A stop event that never waits, and remembers how long it was asked to."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return False


@pytest.fixture
def waiting(settings: Any, tmp_path: Path) -> Iterator[Callable[..., Waiter]]:
    """``waiting(queues=None)``: a listening ``Waiter`` (its wake-up folder this test's own),
    stopped and closed after the test."""
    settings.SQLQUEUE_WAKEUP_DIR = str(tmp_path)
    made: list[Waiter] = []

    def make(queues: list[str] | None = None) -> Waiter:
        waiter = Waiter(threading.Event(), queues)
        made.append(waiter)
        waiter.listen()
        return waiter

    yield make
    for waiter in made:
        waiter.stop.set()
        waiter.close()


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL waits for a NOTIFY instead of polling")
def test_idle_polling_backs_off_to_the_poll_interval_and_resets_on_work(settings: Any) -> None:
    settings.SQLQUEUE_POLL_INTERVAL = 0.4
    settings.SQLQUEUE_WAKEUP_DIR = False  # no enqueue on this host wakes it: it polls
    stop = RecordingStop()
    waiter = Waiter(stop)
    waiter.listen()
    for _ in range(5):
        waiter.wait()
    waiter.found_work()
    waiter.wait()
    assert stop.waits == [0.05, 0.1, 0.2, 0.4, 0.4, 0.05]


@pytest.mark.django_db(transaction=True)
def test_an_enqueue_wakes_an_idle_worker_when_it_commits(settings: Any, waiting: Callable[..., Waiter]) -> None:
    """By NOTIFY on PostgreSQL, by a datagram on this host elsewhere."""
    settings.SQLQUEUE_POLL_INTERVAL = 60
    waiter = waiting()
    woke = threading.Event()

    def idle() -> None:
        while not waiter.wait() and not waiter.stop.is_set():
            pass  # the wait backs off, from 50 ms up to the poll interval
        woke.set()

    sleeper = threading.Thread(target=idle)
    try:
        with transaction.atomic():
            Job.objects.enqueue(noop)
            sleeper.start()
            assert not woke.wait(1), "woke for a job that is not committed"
        assert woke.wait(20), "the commit did not wake the waiter"
        assert not waiter.stop.is_set()
    finally:
        waiter.stop.set()
        sleeper.join()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL's workers LISTEN")
def test_a_worker_sleeps_through_the_enqueues_of_queues_it_does_not_serve(waiting: Callable[..., Waiter]) -> None:
    local_socket = waiting(["reports"]).local_socket
    assert local_socket is not None
    Job.objects.enqueue(noop, queue="mail")
    assert not local_socket.wait(0.2)
    Job.objects.enqueue(noop, queue="reports")
    assert local_socket.wait(20)


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL's workers LISTEN")
def test_a_stop_ends_the_wait_for_a_datagram(settings: Any, waiting: Callable[..., Waiter]) -> None:
    """SIGTERM sets the stop event: the worker must not sleep on until its poll ends."""
    settings.SQLQUEUE_POLL_INTERVAL = 60
    waiter = waiting()
    sleeper = threading.Thread(target=waiter.wait)
    sleeper.start()
    waiter.stop.set()
    sleeper.join(timeout=20)
    assert not sleeper.is_alive(), "the stop did not end the wait"


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL's workers LISTEN")
def test_a_worker_without_a_usable_wakeup_folder_says_so_and_polls(
    settings: Any, tmp_path: Path, warnings: Warnings
) -> None:
    tmp_path.chmod(0o777)  # others could plant sockets there
    settings.SQLQUEUE_WAKEUP_DIR = str(tmp_path)
    stop = RecordingStop()
    waiter = Waiter(stop)
    waiter.listen()
    waiter.wait()
    assert (waiter.local_socket, stop.waits) == (None, [0.05])
    (warned,) = warnings.messages
    assert warned.startswith("No wake-up socket for database 'default' (")
    assert warned.endswith("idle workers poll.")


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_a_lost_listen_connection_falls_back_to_polling_then_listens_again(settings: Any) -> None:
    """The listener is the driver's own connection, so its errors are the driver's, not Django's."""
    settings.SQLQUEUE_POLL_INTERVAL = 0.2
    stop = RecordingStop()
    waiter = Waiter(stop)
    waiter.listen()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [waiter.listener.connection.info.backend_pid])
        waiter.wait()
        # Only the lost connection's handler polls on PostgreSQL.
        assert (stop.waits, waiter.listener) == ([0.05], None)
        waiter.wait()
        assert waiter.listener is not None, "the next wait did not listen again"
    finally:
        waiter.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_a_worker_that_hears_its_own_probe_keeps_listening(settings: Any, warnings: Warnings) -> None:
    settings.SQLQUEUE_POLL_INTERVAL = 5
    waiter = Waiter(threading.Event())
    try:
        waiter.listen()
        assert waiter.probe is not None
        Job.objects.enqueue(noop)  # the probe is heard first; this ends the wait
        waiter.wait()
        assert waiter.probe is None
        assert not waiter.deaf
        assert waiter.listener is not None
    finally:
        waiter.close()
    assert warnings.messages == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_a_worker_that_never_hears_its_probe_says_so_once_and_polls(
    settings: Any, monkeypatch: pytest.MonkeyPatch, warnings: Warnings
) -> None:
    """What PgBouncer in transaction mode does: LISTEN succeeds, and nothing arrives."""
    settings.SQLQUEUE_POLL_INTERVAL = 0.2
    monkeypatch.setattr(wakeup, "PROBE_SECONDS", 0.1)
    monkeypatch.setattr(PostgreSQL, "notify", lambda self, payload: None)  # the probe is lost
    stop = RecordingStop()
    waiter = Waiter(stop)
    waiter.listen()
    for _ in range(3):
        waiter.wait()
    assert waiter.deaf
    assert waiter.listener is None
    (warned,) = warnings.messages
    assert warned.startswith("LISTEN on database 'default' hears no notifications")
    assert warned.endswith("polling every 0.2 s instead.")
    assert stop.waits  # it polls from then on


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL's workers LISTEN")
def test_a_worker_whose_socket_file_was_removed_binds_another(
    waiting: Callable[..., Waiter], warnings: Warnings
) -> None:
    """As systemd-tmpfiles does to files in /tmp that nobody touched for ten days."""
    local_socket = waiting().local_socket
    assert local_socket is not None
    removed = local_socket.sock.getsockname()
    os.unlink(removed)
    local_socket.keep_at = 0  # due
    local_socket.wait(0)
    assert local_socket.sock.getsockname() != removed
    Job.objects.enqueue(noop)
    assert local_socket.wait(20)
    assert warnings.messages == [f"The wake-up socket {removed} was removed: binding another."]
