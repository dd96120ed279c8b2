"""The harness's crash histories against our worker, for jobs enqueued both ways: by
``Job.objects.enqueue`` and through Django's Tasks API (``Task.enqueue``, read back with
``Task.get_result``). One worker pass is the transition; it dies right after each commit
it makes (its registration, the claim, the finish, its unregistration) and right after
the task's external call; each receiver of the worker's signals (``task_started``,
``task_finished``, ours) fails; the reply to each commit is lost. Recovery is what
production runs: the dead worker's jobs rescued, then a worker's pass."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import NamedTuple

import pytest

pytest.importorskip("due_work_harness", reason="due-work-harness needs Python 3.11 or later")

from due_work_harness import CallableDelivery, ExternalCall, Findings, HandoffHistory, HistoriesDiverged
from due_work_harness.crash_histories import assert_crash_at_every_commit_converges
from due_work_harness.integrations.task_queues import TaskOutcome, worker_history

from django_sqlqueue.models import Job
from tests.conformance.bindings import mailer, notify, notify_task, recover, worker_pass

pytestmark = pytest.mark.django_db(transaction=True)

#: Quoted from docs/explanation/guarantees.md, which promises no more.
AT_LEAST_ONCE = (
    "docs/explanation/guarantees.md: 'A job runs until one attempt's outcome is recorded. It runs again when: "
    "its worker process dies after the task ran but before the outcome was written' — 'Still at least once: "
    "everything else. An email sent, an HTTP call made ... a rescued attempt does them again.'"
)
DELIVERY = CallableDelivery(name="django-sqlqueue worker", recover=recover)
SUCCESSFUL = "SUCCESSFUL"


class Way(NamedTuple):
    """How a job is enqueued and read: its id, its status, its arguments."""

    enqueue: Callable[[str], str]
    status_of: Callable[[str], str]
    args_of: Callable[[str], list[str]]


WAYS = {
    "Job.objects.enqueue": Way(
        enqueue=lambda token: str(Job.objects.enqueue(notify, (token,)).pk),
        status_of=lambda job_id: str(Job.objects.get(pk=job_id).status),
        args_of=lambda job_id: Job.objects.get(pk=job_id).args,
    ),
    "Django's Task.enqueue": Way(
        enqueue=lambda token: notify_task.enqueue(token).id,
        status_of=lambda result_id: str(notify_task.get_result(result_id).status),
        args_of=lambda result_id: notify_task.get_result(result_id).args,
    ),
}


@pytest.fixture(params=list(WAYS.values()), ids=list(WAYS))
def way(request: pytest.FixtureRequest) -> Way:
    return request.param  # type: ignore[no-any-return]


def history(
    way: Way, *, external_calls: tuple[ExternalCall, ...] = (), findings: Findings | None = None
) -> HandoffHistory[str, TaskOutcome]:
    def mails(job_id: str) -> int:
        (token,) = way.args_of(job_id)
        return mailer.sent[token]

    return worker_history(
        enqueue=lambda: way.enqueue(uuid.uuid4().hex),
        effect=mails,
        status_of=way.status_of,
        run_worker=worker_pass,
        external_calls=external_calls,
        name="a worker runs a job",
        findings=findings,
    )


def test_every_death_after_a_commit_every_failing_receiver_and_every_lost_reply_converge(way: Way) -> None:
    """Killed right after its registration, its claim, its finish or its unregistration,
    with any receiver of the job's signals raising (a raising ``task_finished`` receiver
    included: the result Django reads stays SUCCESSFUL), or the reply to any of its
    commits lost, the job ends SUCCESSFUL with its mail sent once, as in normal operation."""
    assert_crash_at_every_commit_converges(DELIVERY, history(way))


@pytest.mark.xfail(raises=HistoriesDiverged, strict=True, reason=AT_LEAST_ONCE)
def test_a_death_after_the_external_call_sends_it_again(way: Way) -> None:
    """The mail went out and the worker died before the outcome was written: the job is
    rescued and run again, and the mail is sent twice. Every other history converges: the
    findings table pins exactly that one divergence."""
    assert_crash_at_every_commit_converges(
        DELIVERY,
        history(
            way,
            external_calls=(ExternalCall(mailer, "send"),),
            findings=Findings(
                TaskOutcome(status=SUCCESSFUL, effect=1),
                {"worker died after external call 1": TaskOutcome(status=SUCCESSFUL, effect=2)},
            ),
        ),
    )
