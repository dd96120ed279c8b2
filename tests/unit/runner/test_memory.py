"""A process's resident memory, as ``--max-memory`` reads it."""

from __future__ import annotations

import mmap

from django_sqlqueue.runner.memory import resident_mib

MIB = 2**20


def test_resident_memory_grows_with_what_the_process_writes() -> None:
    # A fresh mapping, every page written: malloc could instead hand back heap memory
    # that earlier tests freed and that is still resident (the large values of the
    # MariaDB tests), and the process would not grow at all.
    before = resident_mib()
    with mmap.mmap(-1, 64 * MIB) as held:
        page = b"\x01" * MIB
        for _ in range(64):
            held.write(page)
        assert resident_mib() - before > 60
        assert held[-1] == 1
