"""The harness's proofs against our Django Tasks backend, through Django's Tasks API:
``@task`` functions enqueued with ``Task.enqueue`` and read with ``Task.get_result``,
run by the worker. The two findings its README reports in django-tasks-db are checked
here: a ``task_finished`` receiver that raises after the task ran (a failing receiver
history: the result stays SUCCESSFUL) and a task whose worker died (the harness's
``MissingReclaim`` probe: the rescue and the next pass run it again)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection

import pytest

pytest.importorskip("due_work_harness", reason="due-work-harness needs Python 3.11 or later")

from django.test import override_settings
from due_work_harness import CallableDelivery, ExternalCall, Findings, HistoriesDiverged
from due_work_harness.crash_histories import assert_crash_at_every_commit_converges
from due_work_harness.gap_probes import MissingReclaim
from due_work_harness.integrations.task_queues import TaskOutcome, worker_history

from django_sqlqueue.backends.compat import TaskResult, task_started
from django_sqlqueue.maintenance.rescue import rescue_expired
from django_sqlqueue.models import Job
from tests.conformance.bindings import mailer, notify_task, recover, worker_pass
from tests.conformance.test_worker import AT_LEAST_ONCE

pytestmark = pytest.mark.django_db(transaction=True)

DELIVERY = CallableDelivery(name="django-sqlqueue Tasks backend", recover=recover)
SUCCESSFUL = "SUCCESSFUL"


def enqueue() -> str:
    return notify_task.enqueue(uuid.uuid4().hex).id


def status_of(result_id: str) -> str:
    return str(notify_task.get_result(result_id).status)


def mails(result_id: str) -> int:
    (token,) = notify_task.get_result(result_id).args
    return mailer.sent[token]


def history(*, external_calls: tuple[ExternalCall, ...] = (), findings: Findings | None = None) -> object:
    return worker_history(
        enqueue=enqueue,
        effect=mails,
        status_of=status_of,
        run_worker=worker_pass,
        external_calls=external_calls,
        name="a worker runs a Django task",
        findings=findings,
    )


def test_every_death_after_a_commit_every_failing_receiver_and_every_lost_reply_converge() -> None:
    """Among the histories: each receiver of ``task_started`` and ``task_finished``
    raising (they are sent robustly: the error is logged, and the result Django reads
    stays SUCCESSFUL), and the worker killed after its claim (the rescue gives the job
    back, the next pass runs it)."""
    assert_crash_at_every_commit_converges(DELIVERY, history())


@pytest.mark.xfail(raises=HistoriesDiverged, strict=True, reason=AT_LEAST_ONCE)
def test_a_death_after_the_external_call_sends_it_again() -> None:
    assert_crash_at_every_commit_converges(
        DELIVERY,
        history(
            external_calls=(ExternalCall(mailer, "send"),),
            findings=Findings(
                TaskOutcome(status=SUCCESSFUL, effect=1),
                {"worker died after external call 1": TaskOutcome(status=SUCCESSFUL, effect=2)},
            ),
        ),
    )


#: A lease the stranded job's dead worker has outlived by the time the rescue runs.
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

    def record(sender: object, task_result: TaskResult, **kwargs: object) -> None:
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
