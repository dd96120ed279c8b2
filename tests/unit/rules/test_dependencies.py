"""The workflows' rules: what ``after=`` and ``after_failure=`` take, and why a finished
parent stops a waiting job."""

from __future__ import annotations

from django_sqlqueue.rules.dependencies import after_failure_problem, blocked_reason, parent_id_problem, stopped_by
from django_sqlqueue.rules.lifecycle import JobStatus


def test_parent_ids_are_positive_integers() -> None:
    assert parent_id_problem(12) is None
    assert parent_id_problem(True) == "holds True, which is neither a saved job nor a job id"
    assert parent_id_problem("12") == "holds '12', which is neither a saved job nor a job id"
    assert parent_id_problem(-1) == "holds -1, which no job has as its id"


def test_after_failure_is_cancel_or_run() -> None:
    assert after_failure_problem("run") is None
    assert after_failure_problem("cancel") is None
    assert after_failure_problem(None) == "after_failure must be one of 'cancel', 'run', not None"


def test_the_first_failed_cancelled_or_deleted_parent_is_the_reason() -> None:
    assert blocked_reason({1: JobStatus.SUCCESSFUL}) is None
    assert blocked_reason({}) is None
    assert blocked_reason({3: JobStatus.CANCELLED, 2: JobStatus.FAILED}) == (
        "Cancelled without running: job 2, which it waits for, ended FAILED."
    )
    assert blocked_reason({4: ""}) == "Cancelled without running: job 4, which it waits for, was deleted."


def test_stopped_by_reads_the_job_a_reason_names() -> None:
    assert stopped_by(blocked_reason({7: "", 9: "FAILED"}) or "") == 7
    assert stopped_by("RuntimeError: boom") is None
