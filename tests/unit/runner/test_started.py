"""The slots through which a worker process tells its supervisor which jobs it started."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from django_sqlqueue.runner.started import Started, StartedJobs


def table(capacity: int = 4) -> StartedJobs:
    return StartedJobs(multiprocessing.get_context("spawn"), capacity)


def test_a_started_job_is_held_running_with_its_start_and_timeout() -> None:
    jobs = table()
    before = time.monotonic()
    jobs.start(7, 2.5)
    jobs.start(8, None)
    held = jobs.held()
    assert set(held) == {7, 8}
    assert before <= held[7].began <= time.monotonic()
    assert (held[7].timeout, held[7].running) == (2.5, True)
    assert (held[8].timeout, held[8].running) == (None, True)


def test_a_job_that_ran_is_held_until_recorded_but_no_longer_running() -> None:
    # After a crash, a job that ran but whose outcome was not written still counts as
    # started (a failed attempt), and no timeout applies to it once its attempt returned.
    jobs = table()
    jobs.start(7, 1.0)
    jobs.ran(7)
    assert jobs.held()[7].running is False
    assert jobs.held()[7].timeout is None
    jobs.recorded([7])
    assert jobs.held() == {}


def test_recorded_slots_are_used_again_and_a_batch_never_holds_more_than_its_size() -> None:
    jobs = table(capacity=2)
    jobs.start(1, None)
    jobs.start(2, None)
    with pytest.raises(RuntimeError, match="more jobs started than the 2"):
        jobs.start(3, None)
    jobs.recorded([1, 99])  # 99 never started there (given back unstarted): ignored
    jobs.start(3, None)
    assert set(jobs.held()) == {2, 3}


def test_a_timeout_is_read_only_once_the_same_start_was_read_on_the_previous_tick() -> None:
    jobs = table()
    jobs.start(7, 1.0)
    assert jobs.stable() == {}  # first seen: maybe read while it was written
    [(job_id, started)] = jobs.stable().items()
    assert (job_id, started.timeout) == (7, 1.0)
    jobs.ran(7)
    assert jobs.stable() == {}  # done running: nothing to enforce


def test_the_supervisor_reads_what_a_spawned_process_writes() -> None:
    context = multiprocessing.get_context("spawn")
    jobs = StartedJobs(context, 3)
    process = context.Process(target=_start_and_run, args=(jobs,))
    process.start()
    process.join(timeout=60)
    assert process.exitcode == 0
    held = jobs.held()
    assert set(held) == {11, 12}
    assert held[11] == Started(began=held[11].began, timeout=3.0, running=True)
    assert held[12].running is False


def _start_and_run(jobs: StartedJobs) -> None:
    jobs.start(11, 3.0)
    jobs.start(12, None)
    jobs.start(13, None)
    jobs.ran(12)
    jobs.recorded([13])
