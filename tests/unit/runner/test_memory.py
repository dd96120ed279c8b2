"""A process's resident memory, as ``--max-memory`` reads it."""

from __future__ import annotations

from django_sqlqueue.runner.memory import resident_mib


def test_resident_memory_grows_with_what_the_process_writes() -> None:
    before = resident_mib()
    held = b"\x01" * (64 * 2**20)
    assert resident_mib() - before > 60
    assert len(held) == 64 * 2**20
