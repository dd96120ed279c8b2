"""The host's claim lock: claims on one host take turns holding an exclusive ``flock``
on a file in the database's wake-up folder (``db/wakeup.py``) held for the claim's short transaction. The engine
whose claim reads its candidates before it locks them (MySQL/MariaDB's, in
``db/engines/mysql.py``) takes the lock; the claim's steps (``db/claiming.py``) offer it.

Why: claimers that read at once read the same first rows, and all but one find them
locked and read again while the winner waits for a CPU they spin on. With several
worker processes to each core, they lost several candidates for each job claimed and
drained less than one process to a core did. Claimers on one host that take turns lose
none to each other; those of other hosts still may, and the candidate window
(``CandidateWindow`` in ``db/engines/mysql.py``) still spreads those.

The lock is only about speed: the row locks and the fence on worker and attempt keep a
claim exactly-once without it. So it never waits long: the kernel releases a ``flock``
when its holder dies (SIGKILL included), and a holder that cannot go on (stopped, or a
thread of its process holding the GIL) is waited for :data:`MOST_WAIT` at most, after
which the claim goes ahead without it. Each holder marks the file with its mark
(its pid and a count), so a claimer that waited in vain knows whether the lock passed
between others meanwhile (a long queue: it waits again at its next claim) or one holder
kept it all along (stuck: its claims go without the lock for :data:`ALONE_AFTER`, so that
a holder stuck for minutes costs each claimer one wait in vain every few seconds, not
one a claim). Where there is no folder
(``SQLQUEUE_WAKEUP_DIR = False``, a system without ``flock``), and whenever the folder
or the file fails with any OS error (a full disk, a read-only or vanished folder, no
permission), claims go without the lock: said once per process as a
warning, never an exception out of a claim."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import struct
import time
import weakref
from collections.abc import Iterator
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.db.wakeup import make_folder, say_once

try:
    import fcntl
except ImportError:  # Windows: no claim lock
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

#: The lock's file in the database's wake-up folder.
FILE_NAME = "claims.lock"
#: The longest a claim waits for the lock before it claims without it (seconds): many
#: claims' time, where a claim takes a few milliseconds.
MOST_WAIT = 0.25
#: How long a claimer that waited in vain claims without the lock (seconds).
ALONE_AFTER = 2.0
#: How long a waiting claimer sleeps between tries, at first and at most (seconds).
FIRST_PAUSE, LONGEST_PAUSE = 0.0002, 0.005


class HostClaimLock:
    """One connection's way to the host's claim lock: its own open file (a ``flock`` belongs to
    an open file, so each thread's connection, which claims alone, has its own), opened
    at its first claim, again in a forked child, and closed when the connection goes."""

    def __init__(self, model: object, connection: BaseDatabaseWrapper) -> None:
        self._alias = connection.alias
        self._descriptor: int | None = None
        self._closing: weakref.finalize[Any, Any] | None = None
        self._pid = 0
        #: Until when (``time.monotonic()``) it claims without the lock, after a wait in vain.
        self._alone_until = 0.0

    @contextlib.contextmanager
    def locked(self) -> Iterator[bool]:
        """Hold the host's claim lock while the block runs; yields whether it was had (False
        when there is no lock to have, or it was waited for :data:`MOST_WAIT` in vain)."""
        descriptor = self._opened()
        if descriptor is None or time.monotonic() < self._alone_until:
            yield False
            return
        had = _take(descriptor)
        if not had:
            if had is None:
                self._alone_until = time.monotonic() + ALONE_AFTER
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)

    def _opened(self) -> int | None:
        if self._pid != os.getpid():  # a forked child shares its parent's file, and so its lock
            self._pid = os.getpid()
            if self._closing is not None:
                self._closing()
            self._descriptor = _open(self._alias)
            if self._descriptor is not None:
                self._closing = weakref.finalize(self, os.close, self._descriptor)
        return self._descriptor


def _open(alias: str) -> int | None:
    """The lock's file of ``alias``, opened; None where there is none (said at debug level)."""
    if fcntl is None:
        return None
    try:
        folder = make_folder(alias)
        if folder is None:
            return None
        return os.open(folder / FILE_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        say_once(logger, "Claims on database %r take no turns (%s)", alias, error)
        return None


def _take(descriptor: int) -> bool | None:
    """Take the lock (``flock``) on ``descriptor``, trying again and again for
    :data:`MOST_WAIT`, and mark it as this holder's: True when it was had, False when
    not (or there is no lock to have), None when one holder kept it all that time."""
    deadline = None
    pause = FIRST_PAUSE
    while True:
        locked = False
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:
            pass
        except OSError as error:  # no flock on this file system, say: no lock
            say_once(logger, "Claims take no turns (%s)", error)
            return False
        try:
            if locked:
                os.pwrite(descriptor, _MARK.pack(os.getpid(), next(_holds)), 0)
                return True
            now = time.monotonic()
            if deadline is None:
                deadline, first_holder = now + MOST_WAIT, os.pread(descriptor, _MARK.size, 0)
            elif now >= deadline:
                return None if os.pread(descriptor, _MARK.size, 0) == first_holder else False
        except OSError as error:  # a full disk, an I/O error: no lock this time
            if locked:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
            say_once(logger, "Claims take no turns (%s)", error)
            return False
        time.sleep(pause)
        pause = min(pause * 2, LONGEST_PAUSE)


#: A holder's mark on the file: its pid, and its holds counted.
_MARK = struct.Struct("=qQ")
_holds = itertools.count()
