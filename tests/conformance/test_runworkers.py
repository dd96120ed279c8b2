"""The harness's process histories against a real ``manage.py runworkers``: a job's task
SIGKILLs the whole ``runworkers`` (its supervisor and its worker process) before or after
its effect, a receipt written in the database; recovery is what production does after
``kill -9``: ``runworkers`` started again, whose leader rescues the dead worker's job
once its lease has run out, and runs it."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("due_work_harness", reason="due-work-harness needs Python 3.11 or later")

from due_work_harness import Findings, HistoriesDiverged
from due_work_harness.process_histories import ProcessHistory, assert_process_deaths_converge, fault_environment

from django_sqlqueue.models import Job, JobStatus
from tests.conformance.test_worker import AT_LEAST_ONCE
from tests.support.workers import Workers, children_of, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import deliver, deliver_atomically

pytestmark = [pytest.mark.processes, pytest.mark.slow]

#: A lease short enough for the restarted ``runworkers`` to rescue the dead worker's job soon.
SHORT_LEASE = {"SQLQUEUE_HEARTBEAT_INTERVAL": "0.3", "SQLQUEUE_LEASE": "1"}
DEATHS = ("before the effect", "after the effect")


def observe(job_id: int) -> tuple[str, int]:
    """The job's status, and how many runs wrote its receipt."""
    job = Job.objects.get(pk=job_id)
    receipt = Receipt.objects.filter(token=job.args[0]).first()
    return str(job.status), 0 if receipt is None else receipt.runs


def history(
    task: Any, start_workers: Callable[..., Workers], tmp_path: Path, **findings: Any
) -> ProcessHistory[int, tuple[str, int]]:
    def run(point: str | None) -> tuple[int, int]:
        token = uuid.uuid4().hex
        job = Job.objects.enqueue(task, (token,))
        workers = start_workers("--burst", "--processes", "1", **fault_environment(point, tmp_path / token))
        return job.pk, workers.wait(60)

    def recover(job_id: int) -> None:
        """Production after ``kill -9``: ``runworkers`` started again, until the job ended."""
        workers = start_workers("--processes", "1", **SHORT_LEASE)
        jobs = Job.objects
        wait_until(lambda: children_of(workers.process.pid), timeout=60, why=workers.text)  # it is up
        wait_until(lambda: jobs.get(pk=job_id).status == JobStatus.SUCCESSFUL, timeout=60, why=workers.text)
        assert workers.stop() == 0, workers.text()

    return ProcessHistory(
        name=f"runworkers runs {task.__name__}",
        initial=(JobStatus.READY.value, 0),
        run=run,
        observe=observe,
        recover=recover,
        death_points=DEATHS,
        **findings,
    )


def test_an_atomic_task_killed_before_or_after_its_effect_leaves_it_once(
    start_workers: Callable[..., Workers], tmp_path: Path
) -> None:
    """SIGKILLed before its effect, or after it and before its success commits (the effect
    rolls back with the death of the connection), the job ends SUCCESSFUL with one receipt."""
    assert_process_deaths_converge(history(deliver_atomically, start_workers, tmp_path))


@pytest.mark.xfail(raises=HistoriesDiverged, strict=True, reason=AT_LEAST_ONCE)
def test_a_task_killed_after_its_effect_does_it_again(start_workers: Callable[..., Workers], tmp_path: Path) -> None:
    """Killed before its effect, the job is rescued and run once; killed after it, the
    rescued job writes its receipt a second time (pinned by the findings table)."""
    assert_process_deaths_converge(
        history(
            deliver,
            start_workers,
            tmp_path,
            findings=Findings(
                (JobStatus.SUCCESSFUL.value, 1), {"died at after the effect": (JobStatus.SUCCESSFUL.value, 2)}
            ),
        )
    )
