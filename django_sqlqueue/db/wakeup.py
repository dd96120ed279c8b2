"""The local wake-up, for the databases without ``NOTIFY`` (SQLite, MySQL/MariaDB): when an
enqueue commits, one datagram on a Unix socket to every idle worker process on this host
that waits on the same database, so it claims at once instead of at its next poll.

Each worker process binds a socket (``<pid>-<random>.sock``) in a folder of its
database's own: ``<base>/<hash>/``, where ``<hash>`` is made from what tells the database
from any other (its engine's ``wakeup_identity``: its vendor, host, port and name, the
file's real path on SQLite), so two projects (or two test
databases) on one host never wake each other's workers. ``<base>`` is
``SQLQUEUE_WAKEUP_DIR``, or ``$XDG_RUNTIME_DIR/sqlqueue``, or ``<tempdir>/sqlqueue-<uid>``.
Both folders are this user's alone (0700, checked, never followed through a link), and
the sockets 0600: only processes of the same user wake the workers, and only they learn
the queue names a datagram carries.

This module is the enqueue's side: the folder, and the datagram sent when an enqueue
commits; ``db/wakeup_socket.py`` is the worker's: the socket it binds there and waits on.

The datagram is sent by ``transaction.on_commit``, once per transaction however many jobs
it wrote: never before the jobs are visible. Sending is best effort: no folder, no
listener, a full buffer, a permission error: nothing is sent, nothing is raised, and the
workers find the jobs at their next poll, as they would without it. PostgreSQL's workers
``LISTEN`` instead (``db/engines/postgresql_notify.py``)."""

from __future__ import annotations

import atexit
import contextlib
import errno
import hashlib
import logging
import os
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.db import connections, transaction

from django_sqlqueue.conf import conf
from django_sqlqueue.db.engines import engine_for

logger = logging.getLogger(__name__)

#: A datagram names the queues of the jobs committed, one a line; past this many bytes
#: (a transaction that wrote to very many queues) it names none, which wakes every worker.
MOST_PAYLOAD = 1024
SUFFIX = ".sock"
#: The folder, in a database's, of the sockets of those who wait for jobs to finish
#: (``db/waiting.py``): apart, so that an enqueue's datagram never goes to them, nor a
#: finish's to a worker.
WAITING = "waiting"
#: The attribute of a connection object that holds its transaction's pending wake-up.
_ATTRIBUTE = "_sqlqueue_wakeup"
#: Each database's folder, by what it is made from; each folder's sockets, by its time.
_folders: dict[tuple[Any, ...], Path] = {}
_listings: dict[Path, tuple[int, list[str]]] = {}
_sending: socket.socket | None = None
_making = threading.Lock()


#: The problems :func:`say_once` has said in this process, by their message.
_said: set[str] = set()


def say_once(log: logging.Logger, message: str, *args: Any) -> None:
    """Warn of a problem with the wake-up folder once per process (by ``message``, its
    arguments aside): it is best effort, tried again at every claim and commit, and a
    full disk must not fill the log it cannot write to anyway."""
    if message not in _said:
        _said.add(message)
        log.warning(message + " (said once per process)", *args)


class UnsafeFolder(OSError):
    """A wake-up folder someone else could write to: it is not used."""


def wakeup_folder(alias: str) -> Path | None:
    """The folder of the sockets of ``alias``'s workers on this host; None where there is
    none: ``SQLQUEUE_WAKEUP_DIR = False``, PostgreSQL (its workers ``LISTEN``), an
    in-memory SQLite database, or a system without Unix sockets."""
    base = conf.SQLQUEUE_WAKEUP_DIR
    database = engine_for(alias)
    if base is False or database.notifies or not hasattr(socket, "AF_UNIX") or not hasattr(os, "geteuid"):
        return None
    settings = database.connection.settings_dict
    # Worked out once: every enqueue's commit asks, and a SQLite file's real path is a system call.
    key = (base, alias, settings["HOST"], settings["PORT"], settings["NAME"])
    try:
        return _folders[key]
    except KeyError:
        pass
    identity = database.wakeup_identity()
    if identity is None:
        return None
    folder = _folders[key] = _base(base) / hashlib.sha256(identity.encode()).hexdigest()[:16]
    return folder


def make_folder(alias: str, *, waiting: bool = False) -> Path | None:
    """``alias``'s wake-up folder (:func:`wakeup_folder`), made if need be (with
    ``waiting``, the folder in it of the sockets of those who wait for jobs to finish,
    :data:`WAITING`); None where there is none. Raises ``OSError`` when it cannot be
    made, or :class:`UnsafeFolder` when it (or the folder it is in) is open to others."""
    folder = wakeup_folder(alias)
    if folder is None:
        return None
    made = [folder.parent, folder, folder / WAITING] if waiting else [folder.parent, folder]
    for path in made:
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
    # The folders nobody else may enter, in one nobody else may write to (and so swap it).
    for path in made:
        check_private(path, os.lstat(path), 0o022 if path == folder.parent else 0o077)
    return made[-1]


def _base(setting: str | None) -> Path:
    if setting:
        return Path(setting)
    if runtime := os.environ.get("XDG_RUNTIME_DIR"):
        return Path(runtime) / "sqlqueue"
    return Path(tempfile.gettempdir()) / f"sqlqueue-{os.geteuid()}"


def wake_on_commit(alias: str, queues: Iterable[str]) -> None:
    """Wake the idle workers of ``queues`` on this host when the current transaction on
    ``alias`` commits (at once in autocommit); nothing if it rolls back. One datagram per
    transaction: the jobs a transaction writes in several calls add their queues to it."""
    if conf.SQLQUEUE_WAKEUP_DIR is False or engine_for(alias).notifies:
        return
    connection = connections[alias]
    pending: _Pending | None = connection.__dict__.get(_ATTRIBUTE)
    # A rolled back transaction (or savepoint) dropped its callback: that one is done with.
    if pending is None or not any(entry[1] is pending for entry in connection.run_on_commit):
        pending = connection.__dict__[_ATTRIBUTE] = _Pending(alias)
        pending.queues.update(queues)
        transaction.on_commit(pending, using=alias)
    else:
        pending.queues.update(queues)


class _Pending:
    """The wake-up a transaction will send when it commits: the queues it wrote jobs to."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.queues: set[str] = set()

    def __call__(self) -> None:
        send(self.alias, self.queues)


def send(alias: str, queues: Iterable[str]) -> int:
    """Send the datagram that names ``queues`` to every worker socket of ``alias`` on this
    host; how many took it. Never raises: an enqueue has committed, whatever happens here."""
    payload = "\n".join(sorted(queues)).encode()
    return send_datagrams(alias, [b"" if len(payload) > MOST_PAYLOAD else payload])


def send_datagrams(alias: str, payloads: list[bytes], *, waiting: bool = False) -> int:
    """Send each of ``payloads`` to every worker socket of ``alias`` on this host (with
    ``waiting``, to every socket of those who wait for jobs to finish); how many sockets
    took them. Never raises: what they tell of has committed, whatever happens here."""
    try:
        folder = wakeup_folder(alias)
        if folder is None:
            return 0
        if waiting:
            folder = folder / WAITING
        sender = _sender()
        sent = 0
        for path in _sockets(folder):
            # No listener (a worker killed), a full buffer (it is awake already), gone.
            with contextlib.suppress(OSError):
                for payload in payloads:
                    sender.sendto(payload, path)
                sent += 1
        return sent
    except FileNotFoundError:  # nobody has made the folder on this host: none to wake
        return 0
    except Exception as error:  # whatever it is, the jobs are committed and will be polled
        say_once(logger, "No wake-up sent for database %r: %s", alias, error)
        return 0


def _sockets(folder: Path) -> list[str]:
    """The socket files in ``folder``, which must be this user's alone (else
    :class:`UnsafeFolder`): listed again only when the folder changed (a worker came or
    went), or changed less than a second ago (its time may not have ticked since)."""
    held = os.lstat(folder)
    check_private(folder, held, 0o077)
    cached = _listings.get(folder)
    if cached is not None and cached[0] == held.st_mtime_ns and time.time_ns() - held.st_mtime_ns > 1_000_000_000:
        return cached[1]
    with os.scandir(folder) as entries:
        paths = [entry.path for entry in entries if entry.name.endswith(SUFFIX)]
    _listings[folder] = (held.st_mtime_ns, paths)
    return paths


def _sender() -> socket.socket:
    """This process's socket to send from, made once (closed at exit)."""
    global _sending
    if _sending is None:
        with _making:
            if _sending is None:
                made = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                made.setblocking(False)
                atexit.register(made.close)
                _sending = made
    return _sending


def check_private(path: Path, held: os.stat_result, closed: int) -> None:
    """Raise :class:`UnsafeFolder` unless ``path`` (``held`` its ``lstat``) is a real folder
    of this user's that nobody else may do what the ``closed`` bits allow."""
    if not stat.S_ISDIR(held.st_mode) or held.st_uid != os.geteuid() or held.st_mode & closed:
        raise UnsafeFolder(
            errno.EPERM,
            f"not a folder of this user's closed to others (mode {stat.filemode(held.st_mode)}, owner {held.st_uid})",
            str(path),
        )
