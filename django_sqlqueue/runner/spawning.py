"""How the supervisor starts a worker process: forked from itself where that is safe,
spawned (a fresh interpreter) otherwise.

A forked child starts with Django already set up and the tasks already imported, so it
claims its first batch a few milliseconds after it is started; a spawned one imports
and sets up everything again (a few hundred milliseconds of CPU each, which eight
processes on two cores pay one after the other). Forking is safe only from a process
that runs no other thread (a thread holding a lock at the fork leaves it held for
ever in the child) and holds no open database connection (parent and child would talk
over one socket): :func:`start_method` falls back to ``spawn`` when another thread
runs, and the supervisor closes its connections before each fork.

A spawned child first imports its parent's ``__main__`` (as ``__mp_main__``): a
``manage.py`` or a script without an ``if __name__ == "__main__"`` guard would run
again in every child, and the command in it with it (:func:`main_module_hidden`).

This module imports only the standard library."""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, Literal

#: The signals that stop a worker process: held back while a child is started, so that
#: none reaches it before it has put its own handlers in place of its parent's.
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})

StartMethod = Literal["fork", "spawn"]


def start_method(wanted: StartMethod) -> StartMethod:
    """How to start the next worker process, given how the settings want them started:
    ``fork`` only while this process runs no thread but the caller's (a metrics server,
    a connection pool or a library's background thread makes it ``spawn``)."""
    if wanted == "fork" and "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return "fork"
    return "spawn"


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Hold back SIGTERM and SIGINT while a child is started: it inherits the mask (a
    forked child would otherwise run its parent's handlers until it sets its own),
    and unblocks them once its handlers are in place (``bootstrap.main``). The parent
    gets any that came meanwhile as soon as the block ends."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """Start a process without telling it where ``__main__`` is.

    The children started here need nothing from it (their entry points live in the
    package), and ``spawn`` reads where ``__main__`` is while ``start()`` runs, so it is
    hidden for just that long."""
    main = sys.modules["__main__"]
    saved: dict[str, Any] = {name: main.__dict__[name] for name in ("__file__", "__spec__") if name in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)
