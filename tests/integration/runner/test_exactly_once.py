"""The proof of transactional completion with real ``runworkers`` processes: under
SIGKILLs, jobs that each insert a row under a UNIQUE key leave each row written by one
run when the task is atomic (``@job(atomic=True)``), and show the runs repeated
without it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.integration.runner.test_supervisor import statuses, unfinished
from tests.support import exactly_once
from tests.support.workers import Workers
from tests.testapp.models import Receipt
from tests.testapp.tasks import insert_receipt, insert_receipt_atomically

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("atomic", [True, False], ids=["atomic", "not-atomic"])
def test_sigkilled_workers_leave_each_row_written_once_by_an_atomic_task(
    start_workers: Callable[..., Workers], tmp_path: Path, atomic: bool
) -> None:
    count = 150
    exactly_once.enqueue(count, atomic=atomic, pause=0.05, markers=tmp_path)
    workers = start_workers("--processes", "2", "--threads", "2")
    kills = exactly_once.drain_under_kills(workers, every=1.5, timeout=120, fail=pytest.fail)
    assert workers.stop() == 0, workers.text()

    assert statuses() == {JobStatus.SUCCESSFUL: count}
    result = exactly_once.tally(count, kills)
    assert sorted(result.runs) == sorted(f"token-{n}" for n in range(count))  # none missing; UNIQUE: none twice
    assert result.dying <= result.rescued  # each killed its worker after its insert
    print(f"atomic={atomic}: {kills} kills, {len(result.rescued)} rescued, {len(result.repeated)} inserted again")
    if atomic:
        assert result.repeated == {}
    else:
        assert result.dying <= set(result.repeated)


def test_a_transaction_held_past_the_lease_keeps_its_job_and_blocks_no_heartbeat_for_good(
    start_workers: Callable[..., Workers],
) -> None:
    """An atomic task holds its transaction (and its writes' locks: on SQLite, the one
    write lock) for twice ``SQLQUEUE_LEASE``: its worker's heartbeat, on a connection of
    its own, waits at most for that commit, never for ever, and the job is neither
    rescued nor run twice; the other jobs flow meanwhile or right after."""
    slow = Job.objects.enqueue(insert_receipt_atomically, ("slow",), {"pause": 6.0})
    Job.objects.enqueue_many(Job.objects.build(insert_receipt, (f"quick-{n}",)) for n in range(20))
    workers = start_workers("--processes", "1", "--threads", "2")
    deadline = time.monotonic() + 60
    while unfinished():
        assert time.monotonic() < deadline, f"{statuses()}:\n{workers.text()}"
        time.sleep(0.2)
    assert workers.stop() == 0, workers.text()
    assert statuses() == {JobStatus.SUCCESSFUL: 21}
    slow.refresh_from_db()
    assert (slow.attempts, slow.errors) == (1, [])
    assert set(Receipt.objects.values_list("runs", flat=True)) == {1}
    assert "Rescued" not in workers.text()
