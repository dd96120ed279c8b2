"""Fixtures of the tests of ``db/``: a wake-up folder of the test's own, and a worker's
socket bound in it (``db/wakeup.py``, ``db/wakeup_socket.py``)."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from django_sqlqueue.db import wakeup, wakeup_socket


@pytest.fixture
def folder(settings: Any, tmp_path: Path) -> Path:
    """This test's own wake-up base folder; the database's folder in it."""
    base = tmp_path / "run"
    base.mkdir(mode=0o700)
    settings.SQLQUEUE_WAKEUP_DIR = str(base)
    made = wakeup.wakeup_folder("default")
    assert made is not None
    return made


@pytest.fixture
def sock(folder: Path) -> Iterator[socket.socket]:
    made = wakeup_socket.bind("default")
    assert made is not None
    yield made
    wakeup_socket.unbind(made)


@pytest.fixture
def short_folder(settings: Any) -> Iterator[Path]:
    """A wake-up base folder of this test's own, with a path short enough for the
    waiters' sockets in it (a Unix socket's path takes 108 bytes at most)."""
    base = Path(tempfile.mkdtemp(prefix="sq"))
    settings.SQLQUEUE_WAKEUP_DIR = str(base)
    yield base
    shutil.rmtree(base, ignore_errors=True)
