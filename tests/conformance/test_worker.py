"""The harness's crash histories against our worker, with jobs enqueued by
``Job.objects.enqueue``: one worker pass is the transition; it dies right after each
commit it makes (its registration, the claim, the finish, its unregistration) and
right after the task's external call, each signal receiver fails, and the reply to
each commit is lost. Recovery is what production runs: the dead worker's jobs rescued,
then a worker's pass."""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("due_work_harness", reason="due-work-harness needs Python 3.11 or later")

from due_work_harness import CallableDelivery, ExternalCall, Findings, HistoriesDiverged
from due_work_harness.crash_histories import assert_crash_at_every_commit_converges
from due_work_harness.integrations.task_queues import TaskOutcome, worker_history

from django_sqlqueue.models import Job, JobStatus
from tests.conformance.bindings import mailer, notify, recover, worker_pass

pytestmark = pytest.mark.django_db(transaction=True)

#: Quoted from docs/explanation/guarantees.md, which promises no more.
AT_LEAST_ONCE = (
    "docs/explanation/guarantees.md: 'A job runs until one attempt's outcome is recorded. It runs again when: "
    "its worker process dies after the task ran but before the outcome was written' — 'Still at least once: "
    "everything else. An email sent, an HTTP call made ... a rescued attempt does them again.'"
)
DELIVERY = CallableDelivery(name="django-sqlqueue worker", recover=recover)


def enqueue() -> str:
    return str(Job.objects.enqueue(notify, (uuid.uuid4().hex,)).pk)


def status_of(job_id: str) -> str:
    return str(Job.objects.get(pk=job_id).status)


def mails(job_id: str) -> int:
    (token,) = Job.objects.get(pk=job_id).args
    return mailer.sent[token]


def history(*, external_calls: tuple[ExternalCall, ...] = (), findings: Findings | None = None) -> object:
    return worker_history(
        enqueue=enqueue,
        effect=mails,
        status_of=status_of,
        run_worker=worker_pass,
        external_calls=external_calls,
        name="a worker runs a job",
        findings=findings,
    )


def test_every_death_after_a_commit_every_failing_receiver_and_every_lost_reply_converge() -> None:
    """Killed right after its registration, its claim, its finish or its unregistration,
    with any receiver of the job's signals raising, or the reply to any of its commits
    lost, the job ends SUCCESSFUL with its mail sent once, as in normal operation."""
    assert_crash_at_every_commit_converges(DELIVERY, history())


@pytest.mark.xfail(raises=HistoriesDiverged, strict=True, reason=AT_LEAST_ONCE)
def test_a_death_after_the_external_call_sends_it_again() -> None:
    """The mail went out and the worker died before the outcome was written: the job is
    rescued and run again, and the mail is sent twice. Everything else converges (the
    findings table pins exactly that one divergence)."""
    assert_crash_at_every_commit_converges(
        DELIVERY,
        history(
            external_calls=(ExternalCall(mailer, "send"),),
            findings=Findings(
                TaskOutcome(status=JobStatus.SUCCESSFUL, effect=1),
                {"worker died after external call 1": TaskOutcome(status=JobStatus.SUCCESSFUL, effect=2)},
            ),
        ),
    )
