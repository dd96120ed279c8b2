"""Python's cyclic garbage collector, paused while ``enqueue_many`` makes and writes
its jobs.

Every job it is given lives until the call returns them all, and each holds five
objects the collector tracks (the job, its state, its dict, its arguments and errors
lists). Each collection meanwhile walks all of them and frees none, a cost that grows
with the number of jobs given. The pause is process-wide, as the
collector is: a cycle another thread drops meanwhile is freed when the last pausing
call ends, not before (reference counting frees everything else as usual). Calls
that overlap in threads share one pause; a collector the project turned off stays off."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
#: The calls inside :func:`paused` that paused the collector and have not ended.
_pausing = 0


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off for the ``with`` block, and back on once the last block that
    turned it off has ended; left alone when it was off already."""
    global _pausing
    with _lock:
        owned = _pausing > 0 or gc.isenabled()
        if owned:
            _pausing += 1
            gc.disable()
    try:
        yield
    finally:
        if owned:
            with _lock:
                _pausing -= 1
                if not _pausing:
                    gc.enable()
