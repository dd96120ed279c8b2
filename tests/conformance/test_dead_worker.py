"""The harness's ``MissingReclaim`` probe, through Django's Tasks API: a task whose worker
died while holding it (RUNNING, its worker gone) is run again by what production runs,
the leader's rescue once the lease ran out and the next worker pass. django-tasks-db's
worker, by the harness's README, leaves such a task RUNNING for ever."""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection
from typing import Any

import pytest

pytest.importorskip("due_work_harness", reason="due-work-harness needs Python 3.11 or later")

from django.test import override_settings
from due_work_harness.gap_probes import MissingReclaim

from django_sqlqueue.backends.compat import TaskResult, task_started
from django_sqlqueue.maintenance.rescue import rescue_expired
from django_sqlqueue.models import Job
from tests.conformance.bindings import notify_task, worker_pass

pytestmark = pytest.mark.django_db(transaction=True)

#: A lease the stranded task's dead worker has outlived by the time the rescue runs.
LEASE_RUN_OUT = override_settings(SQLQUEUE_HEARTBEAT_INTERVAL=0.01, SQLQUEUE_LEASE=0.05)


def strand() -> str:
    """FAULT INJECTION: a task claimed by a worker that then died, as it left it: RUNNING,
    held by a worker with no row, past the lease."""
    result = notify_task.enqueue(uuid.uuid4().hex)
    Job.objects.claim(worker_id="a-worker-that-died")
    time.sleep(0.1)  # past the lease, by the database's clock too
    return result.id


def run_by_one_tick() -> Collection[str]:
    """The ids of the tasks that the leader's rescue and the next worker pass started,
    as Django's ``task_started`` reports them."""
    started: list[str] = []

    def record(sender: object, task_result: TaskResult[Any, Any], **kwargs: object) -> None:
        started.append(task_result.id)

    task_started.connect(record, weak=False)
    try:
        with LEASE_RUN_OUT:
            rescue_expired()
        worker_pass()
    finally:
        task_started.disconnect(record)
    return started


def test_a_task_whose_worker_died_runs_again() -> None:
    MissingReclaim(make_stranded=strand, dispatched_by_one_tick=run_by_one_tick)()
