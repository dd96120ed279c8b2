"""A worker's wake-up socket (``db/wakeup_socket.py``): bound private to this user, the
sockets of killed workers removed as the next binds, and which datagrams wake it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from django_sqlqueue.db import wakeup_socket
from tests.support.wakeups import no_notify


@no_notify
def test_a_stale_socket_is_replaced_at_the_next_start(folder: Path) -> None:
    dead = wakeup_socket.bind("default")
    assert dead is not None
    dead_path = dead.getsockname()
    dead.close()  # killed: its file is left behind
    assert os.path.exists(dead_path)
    sock = wakeup_socket.bind("default")
    assert sock is not None
    try:
        assert not os.path.exists(dead_path)
        assert os.listdir(folder) == [os.path.basename(sock.getsockname())]
        assert oct(os.stat(sock.getsockname()).st_mode & 0o777) == oct(0o600)
        assert oct(os.stat(folder).st_mode & 0o777) == oct(0o700)
    finally:
        wakeup_socket.unbind(sock)


@pytest.mark.parametrize(
    ("payload", "queues", "woken"),
    [
        (b"mail", None, True),
        (b"mail\nreports", ["reports"], True),
        (b"mail", ["reports"], False),
        (b"", ["reports"], True),  # too many queues to name: everyone
    ],
)
def test_a_worker_wakes_for_its_own_queues(payload: bytes, queues: list[str] | None, woken: bool) -> None:
    assert wakeup_socket.wakes(payload, queues) is woken
