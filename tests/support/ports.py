"""TCP ports for the servers the tests start."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1 (the kernel's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
