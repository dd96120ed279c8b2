"""How much memory a worker process holds, for ``--max-memory``."""

from __future__ import annotations

import os
import resource
import sys


def resident_mib() -> float:
    """This process's resident memory (RSS) now, in MiB.

    Read from ``/proc/self/statm`` on Linux: the current size, which shrinks when memory
    is given back. Elsewhere the peak so far (``getrusage``), which never shrinks: a
    process is then recycled at its high-water mark, at worst early, never late."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # Bytes on macOS, kibibytes elsewhere.
        return peak / 2**20 if sys.platform == "darwin" else peak / 2**10
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
