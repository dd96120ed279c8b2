"""Fixtures of the tests of ``db/``: a wake-up folder of the test's own, and a worker's
socket bound in it (``db/wakeup.py``, ``db/wakeup_socket.py``)."""

from __future__ import annotations

import socket
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
