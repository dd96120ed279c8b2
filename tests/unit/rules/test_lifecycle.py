"""The transitions table of ``rules/lifecycle.py`` itself: every status reachable,
finished jobs left alone but by an admin Retry or their deletion, guards that pick one
transition, and the names the runner, the testing helpers and the Tasks backend read."""

from __future__ import annotations

import ast
import itertools
import pathlib

import pytest

from django_sqlqueue.backends.compat import TaskResultStatus
from django_sqlqueue.rules import lifecycle
from django_sqlqueue.rules.lifecycle import (
    ACTIVE,
    ADMIN_RETRY,
    AFTER_FAILURE,
    AFTER_RELEASE,
    AFTER_SNOOZE,
    ENQUEUE,
    FINISHED,
    OUTCOME_STATUS,
    OUTCOMES,
    TASK_RESULT_STATUS,
    TRANSITIONS,
    Condition,
    JobStatus,
    chosen,
    failure_transition,
    mermaid_diagram,
    snooze_transition,
)
from django_sqlqueue.testing import Ran


def test_every_status_is_reachable_from_a_new_job() -> None:
    seen = {t.target for t in TRANSITIONS.values() if not t.sources}
    assert seen == {ENQUEUE.target, lifecycle.ENQUEUE_WAITING.target}
    while reached := {t.target for t in TRANSITIONS.values() if seen & set(t.sources) and t.target is not None} - seen:
        seen |= reached
    assert seen == set(JobStatus)


def test_the_status_sets_split_every_status() -> None:
    assert set(ACTIVE) | set(FINISHED) == set(JobStatus)
    assert not set(ACTIVE) & set(FINISHED)


def test_finished_jobs_move_only_by_an_admin_retry_or_their_deletion() -> None:
    leaving = [t.name for t in TRANSITIONS.values() if set(t.sources) & set(FINISHED) and t.target not in t.sources]
    assert sorted(leaving) == ["admin_retry", "admin_retry_waiting", "delete", "prune", "retry_dependent"]
    # An admin's Edit of a failed or cancelled job keeps it where it is.
    staying = [t.name for t in TRANSITIONS.values() if set(t.sources) & set(FINISHED) and t.target in t.sources]
    assert sorted(staying) == ["admin_edit_cancelled", "admin_edit_failed"]
    assert ADMIN_RETRY.target in ACTIVE
    assert all(TRANSITIONS[name].target is None for name in ("delete", "prune"))


def test_an_admin_retry_makes_a_job_with_unfinished_parents_wait_for_them() -> None:
    assert lifecycle.admin_retry_transition(unfinished=0) is ADMIN_RETRY
    assert lifecycle.admin_retry_transition(unfinished=2) is lifecycle.ADMIN_RETRY_WAITING
    assert lifecycle.ADMIN_RETRY_WAITING.status == JobStatus.WAITING
    assert set(lifecycle.ADMIN_RETRY_WAITING.sources) == set(ADMIN_RETRY.sources)


def test_a_running_job_is_never_deleted_under_its_worker() -> None:
    assert JobStatus.RUNNING not in lifecycle.DELETE.sources


@pytest.mark.parametrize("transition", TRANSITIONS.values(), ids=lambda t: t.name)
def test_a_transition_writes_the_status_exactly_when_it_changes_it(transition: lifecycle.Transition) -> None:
    changes = transition.target is not None and set(transition.sources) != {transition.target}
    assert ("status" in transition.writes) == changes
    assert len(set(transition.writes)) == len(transition.writes)


def test_a_failed_attempt_matches_exactly_one_guard_whatever_the_facts() -> None:
    """Exclusive and exhaustive: the finisher can never find two answers, or none."""
    for cancel, attempts in itertools.product(
        (Condition.CANCEL_REQUESTED, Condition.NOT_CANCEL_REQUESTED),
        (Condition.ATTEMPTS_LEFT, Condition.ATTEMPTS_SPENT),
    ):
        facts = {Condition.HELD, Condition.STARTED, Condition.RAISED, cancel, attempts}
        assert chosen(AFTER_FAILURE, facts) in AFTER_FAILURE
    for cancel in (Condition.CANCEL_REQUESTED, Condition.NOT_CANCEL_REQUESTED):
        assert chosen(AFTER_RELEASE, {Condition.HELD, Condition.UNSTARTED, cancel}) in AFTER_RELEASE
    for budget in (Condition.SNOOZES_LEFT, Condition.SNOOZES_SPENT):
        facts = {Condition.HELD, Condition.STARTED, Condition.SNOOZED, Condition.NOT_CANCEL_REQUESTED, budget}
        assert chosen(AFTER_SNOOZE, facts) in AFTER_SNOOZE
        # A snooze is no failure: no failed attempt's guard fits it.
        with pytest.raises(LookupError, match="none of"):
            chosen(AFTER_FAILURE, facts | {Condition.ATTEMPTS_LEFT})


@pytest.mark.parametrize(
    ("snoozes", "max_snoozes", "expected"),
    [(0, 3, "snooze"), (2, 3, "snooze"), (3, 3, "snooze_spent"), (0, 0, "snooze_spent")],
)
def test_a_snooze_is_given_back_until_its_task_s_max_snoozes_then_failed(
    snoozes: int, max_snoozes: int, expected: str
) -> None:
    transition = snooze_transition(snoozes=snoozes, max_snoozes=max_snoozes)
    assert transition is TRANSITIONS[expected]
    assert transition.target == (JobStatus.READY if expected == "snooze" else JobStatus.FAILED)


def test_a_waiting_job_is_released_or_cancelled_by_exactly_one_guard() -> None:
    leaving = (lifecycle.UNBLOCK, lifecycle.CANCEL_DEPENDENT)
    finished, failed = Condition.DEPENDENCIES_FINISHED, Condition.DEPENDENCY_FAILED
    assert chosen(leaving, {finished, Condition.NO_DEPENDENCY_FAILED}) is lifecycle.UNBLOCK
    assert chosen(leaving, {finished, failed}) is lifecycle.CANCEL_DEPENDENT
    assert chosen(leaving, {Condition.WAITS_FOR_UNFINISHED, failed}) is lifecycle.CANCEL_DEPENDENT
    with pytest.raises(LookupError):  # it waits on
        chosen(leaving, {Condition.WAITS_FOR_UNFINISHED, Condition.NO_DEPENDENCY_FAILED})


def test_chosen_refuses_facts_that_fit_none_or_several() -> None:
    with pytest.raises(LookupError, match="none of"):
        chosen(AFTER_FAILURE, {Condition.HELD})
    everything = set(Condition)
    with pytest.raises(LookupError, match="stop, retry, fail of"):
        chosen(AFTER_FAILURE, everything)


@pytest.mark.parametrize(
    ("attempts", "max_attempts", "cancelled", "expected"),
    [
        (1, 3, False, "retry"),
        (3, 3, False, "fail"),
        (4, 3, False, "fail"),
        (1, 3, True, "stop"),
        (3, 3, True, "stop"),
    ],
)
def test_a_failed_attempt_is_stopped_if_cancelled_else_retried_while_attempts_are_left(
    attempts: int, max_attempts: int, cancelled: bool, expected: str
) -> None:
    transition = failure_transition(attempts=attempts, max_attempts=max_attempts, cancelled=cancelled)
    assert transition is TRANSITIONS[expected]


def test_each_ending_of_an_attempt_has_one_word_outcome_and_one_status() -> None:
    assert OUTCOME_STATUS == {
        "succeeded": JobStatus.SUCCESSFUL,
        "retried": JobStatus.READY,
        "failed": JobStatus.FAILED,
        "cancelled": JobStatus.CANCELLED,
        "snoozed": JobStatus.READY,
        "expired": JobStatus.CANCELLED,
    }
    assert OUTCOMES == ("succeeded", "retried", "failed", "cancelled", "snoozed", "expired")
    assert all(" " not in outcome for outcome in OUTCOMES)
    # run_jobs() counts its attempts by the same words.
    assert Ran._fields == OUTCOMES


def test_every_status_has_a_django_task_result_status() -> None:
    assert set(TASK_RESULT_STATUS) == set(JobStatus)
    assert {status: TaskResultStatus(name) for status, name in TASK_RESULT_STATUS.items()}[
        JobStatus.CANCELLED
    ] == TaskResultStatus.FAILED


def test_a_deletion_has_no_status() -> None:
    assert lifecycle.CLAIM.status == JobStatus.RUNNING
    with pytest.raises(ValueError, match="prune deletes its row"):
        _ = lifecycle.PRUNE.status


def test_the_diagram_has_an_edge_for_each_source_of_each_transition() -> None:
    lines = mermaid_diagram().splitlines()
    assert lines[0] == "stateDiagram-v2"
    assert "    [*] --> READY: enqueue" in lines
    assert "    READY --> RUNNING: claim" in lines
    assert "    FAILED --> READY: admin_retry" in lines
    assert "    CANCELLED --> READY: admin_retry" in lines
    assert "    SUCCESSFUL --> [*]: prune" in lines
    assert len(lines) - 1 == sum(max(len(t.sources), 1) for t in TRANSITIONS.values())


def test_the_docs_draw_the_diagram_from_the_table() -> None:
    """The page draws it at build time (``docs/_ext``), and holds no copy that could drift."""
    page = (pathlib.Path(__file__).parents[3] / "docs" / "explanation" / "lifecycle.md").read_text()
    assert "```{sqlqueue-lifecycle}\n```" in page
    assert "stateDiagram" not in page


def test_the_rules_import_no_queries() -> None:
    """``rules/`` holds pure rules: it imports no layer above it, and not the models."""
    forbidden = ("django_sqlqueue.db", "django_sqlqueue.runner", "django_sqlqueue.admin", "django_sqlqueue.models")
    source = pathlib.Path(lifecycle.__file__).read_text()
    imported = [node.module or "" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)]
    assert not [name for name in imported if name.startswith(forbidden)]
