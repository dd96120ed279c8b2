"""How the supervisor starts a worker process: forked only from a process that runs no
other thread, and with the stop signals held back while it starts."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator

import pytest

from django_sqlqueue.runner.spawning import STOP_SIGNALS, start_method, stop_signals_held

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is the default on Linux only")


@pytest.fixture
def another_thread() -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="a library's background thread")
    thread.start()
    yield
    stop.set()
    thread.join()


@linux_only
def test_a_process_running_only_its_own_thread_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Whatever threads other tests left running in this process.
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert start_method("fork") == "fork"


@pytest.mark.usefixtures("another_thread")
def test_a_process_running_another_thread_spawns_instead() -> None:
    assert start_method("fork") == "spawn"


def test_spawn_is_spawn() -> None:
    assert start_method("spawn") == "spawn"


def test_a_stop_signal_sent_while_a_child_starts_arrives_after() -> None:
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        with stop_signals_held():
            assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) >= STOP_SIGNALS
            # To this thread: one sent to the process could go to another thread of the test run.
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
            assert received == []
        assert received == [signal.SIGTERM]
        assert not STOP_SIGNALS & signal.pthread_sigmask(signal.SIG_BLOCK, ())
    finally:
        signal.signal(signal.SIGTERM, previous)
