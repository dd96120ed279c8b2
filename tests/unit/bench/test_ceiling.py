"""The raw side of ``sqlqueue_bench``: a process that dies is an error at once, not a
wait; a deadlock is run again, as the app runs its own again."""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

from django_sqlqueue.bench import ceiling
from django_sqlqueue.bench.dialects import SQLite
from django_sqlqueue.bench.raw import RawDatabase, jobs_table


def test_a_raw_drain_process_that_dies_is_reported_at_once(tmp_path: Path) -> None:
    unopenable = RawDatabase(SQLite(), {"database": f"{tmp_path}/no/such/dir/db.sqlite3"}, jobs_table("jobs"), "0")
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="a raw drain process exited with status 1"):
        ceiling.drain(unopenable, "q", 10, processes=2, batch_size=5)
    assert time.monotonic() - began < 30  # it used to wait 60 s, then raise queue.Empty


class Deadlocking:
    """A raw claim or finish that fails with ``errors`` one per call while they last,
    then answers ``replies`` one per call."""

    def __init__(self, errors: list[Exception], replies: list[Any]) -> None:
        self.errors, self.replies, self.calls = errors, replies, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.replies.pop(0)


def drain_in_this_process(tmp_path: Path, claim: Deadlocking, finish: Deadlocking) -> Any:
    """One raw drain process's loop, run here with ``claim`` and ``finish`` in place of the SQL."""
    database = RawDatabase(SQLite(), {"database": f"{tmp_path}/db.sqlite3"}, jobs_table("jobs"), "0")
    start, results = threading.Event(), queue.Queue()  # type: ignore[var-annotated]
    start.set()
    with patch.object(RawDatabase, "claim_and_finish", return_value=(claim, finish)):
        ceiling._drain_process(database, "q", 5, "raw-0", start, results)
    assert results.get_nowait() == "ready"
    return results.get_nowait()


def test_a_raw_drain_runs_a_deadlocked_claim_or_finish_again(tmp_path: Path) -> None:
    # What MariaDB said to a raw claim's UPDATE in two of four 100,000-job runs.
    deadlock = MySQLError(1213, "Deadlock found when trying to get lock; try restarting transaction")
    claims = [([1, 2, 3], 2), ([4], 0), ([], 1)]
    claim = Deadlocking([deadlock, sqlite3.OperationalError("database is locked")], claims)
    finish = Deadlocking([MySQLError(1205, "Lock wait timeout exceeded")], [None, None])
    done, lost, _, _ = drain_in_this_process(tmp_path, claim, finish)
    assert (done, lost) == (4, 3)
    assert (claim.calls, finish.calls) == (5, 3)


def test_a_raw_drain_stops_on_an_error_that_is_not_transient(tmp_path: Path) -> None:
    claim = Deadlocking([sqlite3.OperationalError("no such table: jobs")], [])
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        drain_in_this_process(tmp_path, claim, Deadlocking([], []))
    assert claim.calls == 1


class MySQLError(Exception):
    """Like a MySQLdb error: its first argument is the server's error number."""
