"""The local wake-up as a test sees it: which databases have it, and what a worker's
socket received."""

from __future__ import annotations

import socket

import pytest
from django.db import connection

#: The databases without NOTIFY: their workers wait on a socket.
no_notify = pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL's workers LISTEN")


def received(sock: socket.socket) -> list[bytes]:
    datagrams = []
    try:
        while True:
            datagrams.append(sock.recv(4096))
    except BlockingIOError:
        return datagrams
