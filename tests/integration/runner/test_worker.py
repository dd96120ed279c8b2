"""Real ``runworkers`` worker processes: a batch whose outcomes the database cannot all
store (the good jobs are written once, the bad ones fail with the reason, and nothing
loops), processes recycled by ``--max-jobs-per-process`` and ``--max-memory``
(replaced between batches, without a crash or a lost job), and every combination of the
options that size the processes, their threads and their batches running each job once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from django.db import connection
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from django_sqlqueue.models import Job, JobStatus, Worker
from tests.support.workers import Workers
from tests.testapp.models import Receipt
from tests.testapp.tasks import leak, raise_unprintable, record, unstorable, worker_pid

pytestmark = pytest.mark.slow

StartWorkers = Callable[..., Workers]


def results_in_order() -> list[object]:
    """The pids the jobs returned, in the order they were enqueued (and run)."""
    return [job.result for job in Job.objects.order_by("pk")]


def assert_ran_once_each(count: int) -> None:
    finished = Job.objects.values_list("status", "attempts", "errors")
    assert list(finished) == [(JobStatus.SUCCESSFUL, 1, [])] * count


def test_max_jobs_per_process_replaces_each_process_after_its_jobs(start_workers: StartWorkers) -> None:
    Job.objects.enqueue_many(Job.objects.build(worker_pid) for _ in range(6))
    workers = start_workers("--processes", "1", "--max-jobs-per-process", "2", "--burst")
    assert workers.wait(90) == 0, workers.text()
    assert_ran_once_each(6)
    assert sorted(Counter(results_in_order()).values()) == [2, 2, 2]
    assert "each process replaced after 2 jobs" in workers.text()
    assert "during start-up" not in workers.text()


def test_max_memory_replaces_a_process_that_grew_past_it(start_workers: StartWorkers) -> None:
    # A fresh worker holds well under 300 MiB; after the leak it holds more.
    Job.objects.enqueue_many(
        [
            *(Job.objects.build(worker_pid) for _ in range(3)),
            Job.objects.build(leak, (300,)),
            *(Job.objects.build(worker_pid) for _ in range(2)),
        ]
    )
    workers = start_workers("--processes", "1", "--batch-size", "1", "--max-memory", "300", "--burst")
    assert workers.wait(90) == 0, workers.text()
    assert_ran_once_each(6)
    first, second = results_in_order()[3:5]
    assert results_in_order() == [first] * 4 + [second] * 2
    assert first != second


def test_a_bad_outcome_fails_its_job_alone_and_the_burst_ends(start_workers: Callable[..., Workers]) -> None:
    # Each bad job first in a batch of good ones: with four threads, batches start at four jobs.
    bad = [raise_unprintable] if connection.vendor == "sqlite" else [raise_unprintable, unstorable]
    for index, task in enumerate(bad):
        Job.objects.enqueue(task)
        Job.objects.enqueue_many(Job.objects.build(record, (f"token-{index}-{n}",)) for n in range(7))

    workers = start_workers("--burst", "--processes", "1", "--threads", "4")
    assert workers.wait(120) == 0, workers.text()

    good = Job.objects.filter(task="tests.testapp.tasks.record")
    assert list(good.values_list("status", "attempts", "errors").distinct()) == [(JobStatus.SUCCESSFUL, 1, [])]
    assert list(Receipt.objects.values_list("runs", flat=True).distinct()) == [1]
    assert Receipt.objects.count() == good.count() == 7 * len(bad)

    unprintable = Job.objects.get(task="tests.testapp.tasks.raise_unprintable")
    (error,) = unprintable.errors
    assert (unprintable.status, error["exception_class_path"]) == (JobStatus.FAILED, "tests.testapp.tasks.Unprintable")
    assert error["message"] == "<str() of this Unprintable raised RuntimeError>"
    if unstorable in bad:
        refused = Job.objects.get(task="tests.testapp.tasks.unstorable")
        (error,) = refused.errors
        assert (refused.status, refused.result) == (JobStatus.FAILED, None)
        assert error["exception_class_path"] == "django_sqlqueue.exceptions.InvalidJobError"
        assert error["message"].startswith("tests.testapp.tasks.unstorable finished, but ")


#: A few jobs, enough for several batches and recycles, few enough for a dozen runs.
GRID_JOBS = 5


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    processes=st.integers(1, 2),
    threads=st.integers(1, 3),
    batch_size=st.integers(1, 3),
    max_jobs=st.none() | st.integers(1, GRID_JOBS + 1),
    max_jobs_per_process=st.none() | st.integers(1, 3),
    # 1 MiB: below what any process holds, so every process runs one batch and is replaced.
    max_memory=st.sampled_from([None, 1]),
)
@example(processes=1, threads=2, batch_size=1, max_jobs=None, max_jobs_per_process=500, max_memory=None)
def test_every_combination_of_processes_threads_and_batches_runs_each_job_once(
    start_workers: StartWorkers,
    processes: int,
    threads: int,
    batch_size: int,
    max_jobs: int | None,
    max_jobs_per_process: int | None,
    max_memory: int | None,
) -> None:
    """Issue 36: ``--threads`` above ``--batch-size`` with ``--max-jobs-per-process``
    claimed more jobs than the started-jobs slots hold; each process crashed, and every
    job ran again on each attempt until it was FAILED."""
    Job.objects.all().delete()
    Receipt.objects.all().delete()
    Worker.objects.all().delete()
    Job.objects.enqueue_many(Job.objects.build(record, (f"token-{n}",), max_attempts=3) for n in range(GRID_JOBS))
    options = {
        "--processes": processes,
        "--threads": threads,
        "--batch-size": batch_size,
        "--max-jobs": max_jobs,
        "--max-jobs-per-process": max_jobs_per_process,
        "--max-memory": max_memory,
    }
    workers = start_workers(
        "--burst", *(str(part) for name, value in options.items() if value for part in (name, value))
    )
    assert workers.wait(120) == 0, workers.text()

    ran = GRID_JOBS if max_jobs is None else min(max_jobs, GRID_JOBS)
    assert list(Receipt.objects.values_list("runs", flat=True)) == [1] * ran, workers.text()
    finished = Counter(
        (status, attempts, len(errors))
        for status, attempts, errors in Job.objects.values_list("status", "attempts", "errors")
    )
    assert finished == Counter({(JobStatus.SUCCESSFUL, 1, 0): ran, (JobStatus.READY, 0, 0): GRID_JOBS - ran}), (
        workers.text()
    )
    assert "more jobs started" not in workers.text()
    assert f"x {min(threads, batch_size)} thread(s)" in workers.text()
    assert (f"--threads {threads} is more than the batch size ({batch_size})" in workers.text()) == (
        threads > batch_size
    )
