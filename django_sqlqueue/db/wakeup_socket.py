"""The worker's side of the local wake-up (``db/wakeup.py``): the socket
that an idle worker process binds in its database's wake-up folder and waits on, and
what a datagram on it means to the worker. Made private to this user (0700 folders,
0600 sockets); the sockets of workers killed without unbinding are removed as the next
one binds."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Iterable
from pathlib import Path

from django_sqlqueue.db.wakeup import SUFFIX, make_folder

logger = logging.getLogger(__name__)


def wakes(payload: bytes, queues: Iterable[str] | None) -> bool:
    """Whether a datagram is news to a worker of ``queues`` (None: every queue)."""
    return not queues or not payload or not set(payload.decode(errors="replace").split("\n")).isdisjoint(queues)


def bind(alias: str, *, waiting: bool = False) -> socket.socket | None:
    """A new non-blocking socket bound in ``alias``'s wake-up folder (made if need be),
    for a worker to wait on (with ``waiting``, in its folder of those who wait for jobs
    to finish, ``db/waiting.py``); None where there is no folder (:func:`~django_sqlqueue.db.wakeup.wakeup_folder`).
    The sockets that no process listens on any more (workers killed) are removed first.

    Raises ``OSError`` when the folder cannot be made or used (it is someone else's, or
    open to others; the socket's path is too long): the worker then polls."""
    folder = make_folder(alias, waiting=waiting)
    if folder is None:
        return None
    _remove_stale(folder)
    path = folder / f"{os.getpid()}-{secrets.token_hex(4)}{SUFFIX}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def touch(sock: socket.socket) -> bool:
    """Set the times of the file of a socket made by :func:`bind` to now; whether it is
    still there."""
    try:
        os.utime(sock.getsockname())
    except OSError:
        return False
    return True


def unbind(sock: socket.socket) -> None:
    """Close a socket made by :func:`bind` and remove its file."""
    path = sock.getsockname()
    sock.close()
    with contextlib.suppress(OSError):
        os.unlink(path)


def _remove_stale(folder: Path) -> None:
    """Remove the sockets of ``folder`` that nobody listens on: a worker killed by SIGKILL
    (or a power cut) leaves its file behind."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.endswith(SUFFIX) and not _listened(entry.path):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    logger.debug("Removed the stale wake-up socket %s", entry.path)


def _listened(path: str) -> bool:
    """Whether a process listens on the socket file ``path`` (when in doubt, yes)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(path)
        except ConnectionRefusedError:
            return False
        except OSError:
            pass  # gone meanwhile, say: not ours to remove
    return True
