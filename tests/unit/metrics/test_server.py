"""``runworkers --metrics-port``'s HTTP server, in this process."""

from __future__ import annotations

import os
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from django_sqlqueue.metrics.server import process_dead, serving
from tests.support.ports import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something else listens on."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_serves_the_metrics_with_a_directory_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    port = free_port()
    with serving("127.0.0.1", port) as path:
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == path
        assert os.path.isdir(path)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
            body = response.read().decode()
    assert "sqlqueue_workers_alive 0.0" in body.splitlines()
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    assert not os.path.exists(path)


def test_a_directory_the_user_gave_is_used_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    with serving("127.0.0.1", free_port()) as path:
        assert path == str(tmp_path)
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path)
    assert tmp_path.is_dir()


def test_a_port_in_use_raises_and_leaves_nothing(taken_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    made = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("sqlqueue-metrics-*"))
    with pytest.raises(OSError, match="Address already in use"), serving("127.0.0.1", taken_port):
        pass
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("sqlqueue-metrics-*")) <= made


def test_a_dead_process_s_live_gauge_files_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    live, kept = tmp_path / "gauge_livesum_4242.db", tmp_path / "counter_4242.db"
    live.touch()
    kept.touch()
    process_dead(4242)
    assert (live.exists(), kept.exists()) == (False, True)  # counters keep counting what it did
