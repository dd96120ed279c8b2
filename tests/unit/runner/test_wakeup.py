"""How an idle worker waits for work (``runner/wakeup.py``): polling that backs off, or
PostgreSQL's NOTIFY. A real idle ``runworkers`` is in ``tests/integration/runner/``."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from django.db import connection, transaction

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


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL waits for a NOTIFY instead of polling")
def test_idle_polling_backs_off_to_the_poll_interval_and_resets_on_work(settings: Any) -> None:
    settings.SQLQUEUE_POLL_INTERVAL = 0.4
    stop = RecordingStop()
    waiter = Waiter(stop)
    waiter.listen()
    for _ in range(5):
        waiter.wait()
    waiter.found_work()
    waiter.wait()
    assert stop.waits == [0.05, 0.1, 0.2, 0.4, 0.4, 0.05]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_notify_wakes_an_idle_worker_when_the_enqueue_commits(settings: Any) -> None:
    settings.SQLQUEUE_POLL_INTERVAL = 60
    waiter = Waiter(threading.Event())
    waiter.listen()
    woke = threading.Event()

    def idle() -> None:
        waiter.wait()
        woke.set()

    try:
        with transaction.atomic():
            Job.objects.enqueue(noop)
            sleeper = threading.Thread(target=idle)
            sleeper.start()
            assert not woke.wait(1), "woke for a job that is not committed"
        assert woke.wait(20), "the commit's NOTIFY did not wake the waiter"
        sleeper.join()
    finally:
        waiter.close()


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
    monkeypatch.setattr(wakeup, "notify", lambda alias, payload: None)  # the probe is lost
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
