"""The raw side of ``sqlqueue_bench``: a process that dies is an error at once, not a wait."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from django_sqlqueue.bench import ceiling


def test_a_raw_drain_process_that_dies_is_reported_at_once(tmp_path: Path) -> None:
    unopenable = ceiling.RawDatabase(
        "sqlite", {"database": f"{tmp_path}/no/such/dir/db.sqlite3"}, ceiling.jobs_table("jobs"), True
    )
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="a raw drain process exited with status 1"):
        ceiling.drain(unopenable, "q", 10, processes=2, batch_size=5)
    assert time.monotonic() - began < 30  # it used to wait 60 s, then raise queue.Empty
