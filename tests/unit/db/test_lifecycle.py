"""The writers of a job's status read the transitions table: the columns each statement
sets are the columns its transitions declare, its rows are those the table allows, and
a failed attempt is decided once, however many of its writers look at it."""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_sqlqueue.db import claiming, engines, finishing, pruning
from django_sqlqueue.db.lifecycle import CHECKED_ELSEWHERE, SQL_CONDITIONS, allowed, status_case, written, written_case
from django_sqlqueue.exceptions import JobCancelled
from django_sqlqueue.models import Job
from django_sqlqueue.rules import failures, lifecycle
from django_sqlqueue.rules.lifecycle import AFTER_RELEASE, Condition, JobStatus, Transition
from django_sqlqueue.runner import execution
from django_sqlqueue.testing import Ran, run_jobs
from tests.djtasks.tasks import fail
from tests.support import status_writes
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db

#: A column a statement sets: what follows SET or a comma, before its "=".
SET_COLUMN = re.compile(r"(?:\bSET|,)\s+[`\"]?(\w+)[`\"]?\s*=")


def set_columns(sql: str) -> set[str]:
    """The columns an UPDATE sets (its SET clause, up to its WHERE)."""
    setting = sql.split(" SET ", 1)[1].rsplit(" WHERE ", 1)[0]
    return set(SET_COLUMN.findall(f"SET {setting}"))


def updates_by(action: Callable[[], Any]) -> list[set[str]]:
    """The columns of each UPDATE ``action`` makes."""
    with CaptureQueriesContext(connection) as queries:
        action()
    return [set_columns(q["sql"]) for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]


def writes(*transitions: Transition) -> set[str]:
    return {column for transition in transitions for column in transition.writes}


def claimed(count: int = 1, **options: Any) -> list[Job]:
    Job.objects.enqueue_many(Job.objects.build(noop, (index,), **options) for index in range(count))
    return Job.objects.claim(worker_id="w", limit=count)


def test_set_columns_reads_a_case_and_an_increment() -> None:
    sql = (
        'UPDATE "t" SET "status" = CASE WHEN ("id" IN (%s, %s)) THEN %s ELSE "t"."status" END, '
        'attempts = attempts + 1 WHERE "id" = %s'
    )
    assert set_columns(sql) == {"status", "attempts"}


def test_the_claim_sets_the_columns_of_claim() -> None:
    Job.objects.enqueue(noop)
    assert updates_by(lambda: Job.objects.claim(worker_id="w")) == [writes(lifecycle.CLAIM)]
    assert Job.objects.get().status == lifecycle.CLAIM.target


@pytest.mark.parametrize(
    ("outcome", "transition"),
    [
        ("succeed", lifecycle.SUCCEED),
        ("retry", lifecycle.RETRY),
        ("fail", lifecycle.FAIL),
        ("stop", lifecycle.STOP),
    ],
)
def test_the_finisher_sets_the_columns_of_each_ending(outcome: str, transition: Transition) -> None:
    (job,) = claimed(max_attempts=1 if outcome == "fail" else 3)
    error = JobCancelled("stop") if outcome == "stop" else ValueError("boom")
    succeeded, failed = ({job: {"done": True}}, {}) if outcome == "succeed" else ({}, {job: error})
    columns = updates_by(lambda: Job.objects.finish(worker_id="w", succeeded=succeeded, failed=failed))
    assert columns == [writes(transition)]
    assert Job.objects.get().status == transition.target


def test_a_success_that_returned_none_writes_the_columns_of_succeed_and_stores_no_result() -> None:
    (job,) = claimed()
    columns = updates_by(lambda: Job.objects.finish(worker_id="w", succeeded={job: None}, failed={}))
    assert columns == [writes(lifecycle.SUCCEED)]
    assert Job.objects.filter(result__isnull=True).get().status == lifecycle.SUCCEED.target


def declaring(transition: Transition, *more: str) -> Transition:
    """``transition`` as if the table declared it writing ``more`` columns too."""
    return dataclasses.replace(transition, writes=(*transition.writes, *more))


def test_the_success_write_cannot_drift_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    (job,) = claimed()
    monkeypatch.setattr(finishing, "SUCCEED", declaring(lifecycle.SUCCEED, "progress"))
    with pytest.raises(ValueError, match="succeed writes"):
        Job.objects.finish(worker_id="w", succeeded={job: 1}, failed={})


def test_the_release_cannot_drift_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    (job,) = claimed()
    drifted = (lifecycle.RELEASE_CANCELLED, declaring(lifecycle.RELEASE, "worker"))
    monkeypatch.setattr(finishing, "AFTER_RELEASE", drifted)
    with pytest.raises(ValueError, match="release writes"):
        Job.objects.release(worker_id="w", unstarted=[job])


def test_the_claim_cannot_drift_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    Job.objects.enqueue(noop)
    monkeypatch.setattr(claiming, "CLAIM", declaring(lifecycle.CLAIM, "progress"))
    engines.forget()
    try:
        with pytest.raises(ValueError, match="claim writes"):
            Job.objects.claim(worker_id="w")
    finally:
        engines.forget()
    assert set(claiming.CLAIMED) == set(lifecycle.CLAIM.writes)


def test_written_case_names_the_columns_of_every_transition_it_picks_from() -> None:
    columns = written_case(AFTER_RELEASE, finished_at=1, attempts=2, started_at=None)
    assert set(columns) == writes(*AFTER_RELEASE)
    assert (columns["attempts"], columns["started_at"]) == (2, None)
    with pytest.raises(ValueError, match="release_cancelled writes"):
        written_case(AFTER_RELEASE, finished_at=1, attempts=2)
    with pytest.raises(ValueError, match=r"None of release_cancelled, release writes \['worker'\]"):
        written_case(AFTER_RELEASE, finished_at=1, attempts=2, started_at=None, worker="")


def test_a_replace_writes_the_columns_of_replace_on_the_rows_it_allows() -> None:
    Job.objects.enqueue(noop, (1,), unique_key="k")
    with CaptureQueriesContext(connection) as queries:
        Job.objects.enqueue(noop, (2,), unique_key="k", on_conflict="replace")
    (replacing,) = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]
    assert set_columns(replacing) == writes(lifecycle.REPLACE)
    assert Job.objects.get().args == [2]
    assert (lifecycle.REPLACE.sources, lifecycle.REPLACE.target) == ((JobStatus.READY,), JobStatus.READY)


def test_pruning_moves_only_what_prune_allows() -> None:
    due = pruning.due(Job.objects.all(), JobStatus.FAILED, datetime.timedelta(days=1), timezone.now())
    assert str(Job.objects.filter(allowed(lifecycle.PRUNE)).query).split(" WHERE ")[1] in str(due.query)
    with pytest.raises(ValueError, match="READY is not pruned"):
        pruning.due(Job.objects.all(), JobStatus.READY, datetime.timedelta(days=1), timezone.now())


def test_a_batch_of_several_endings_sets_the_columns_of_them_all() -> None:
    done, again = claimed(2)
    columns = updates_by(
        lambda: Job.objects.finish(worker_id="w", succeeded={done: 1}, failed={again: ValueError("boom")})
    )
    assert columns == [writes(lifecycle.SUCCEED, lifecycle.RETRY)]


def test_the_release_sets_the_columns_of_both_releases_in_one_case() -> None:
    kept, cancelled = claimed(2)
    Job.objects.cancel([cancelled.pk])
    columns = updates_by(lambda: Job.objects.release(worker_id="w", unstarted=[kept, cancelled]))
    assert columns == [writes(*AFTER_RELEASE)]
    statuses = dict(Job.objects.values_list("pk", "status"))
    assert (statuses[kept.pk], statuses[cancelled.pk]) == (lifecycle.RELEASE.target, lifecycle.RELEASE_CANCELLED.target)


def test_cancel_sets_the_columns_of_cancel_and_of_request_cancel() -> None:
    (running,) = claimed()
    ready = Job.objects.enqueue(noop)
    columns = updates_by(lambda: Job.objects.cancel([running.pk, ready.pk]))
    assert columns == [writes(lifecycle.CANCEL), writes(lifecycle.REQUEST_CANCEL)]


def test_the_admins_changes_write_their_transitions_columns_on_the_rows_they_allow() -> None:
    from django_sqlqueue.admin import changes
    from django_sqlqueue.managers import _retried

    assert set(_retried(0)) == writes(lifecycle.ADMIN_RETRY)
    assert set(_retried(2)) == writes(lifecycle.ADMIN_RETRY_WAITING)
    (running,) = claimed(max_attempts=1)
    assert updates_by(lambda: Job.objects.run_now(Job.objects.all())) == [writes(lifecycle.RUN_NOW)]
    Job.objects.finish(worker_id="w", failed={running: ValueError("boom")})
    assert updates_by(lambda: Job.objects.retry(Job.objects.all())) == [writes(lifecycle.ADMIN_RETRY)]
    assert str(changes.RETRY.applies()) == str(allowed(lifecycle.ADMIN_RETRY) | allowed(lifecycle.ADMIN_RETRY_WAITING))
    assert str(changes.RUN_NOW.applies()) == str(allowed(lifecycle.RUN_NOW))
    assert str(changes.DELETE.applies()) == str(allowed(lifecycle.DELETE))
    assert str(changes.CANCEL.applies()) == str(allowed(lifecycle.CANCEL) | allowed(lifecycle.REQUEST_CANCEL))


def test_written_refuses_columns_a_transition_does_not_declare() -> None:
    assert written(lifecycle.RUN_NOW, run_at=1) == {"run_at": 1}
    assert written(lifecycle.CANCEL, finished_at=1) == {"status": JobStatus.CANCELLED, "finished_at": 1}
    with pytest.raises(
        ValueError, match=r"cancel writes \['finished_at', 'status'\], not \['finished_at', 'status', 'worker'\]"
    ):
        written(lifecycle.CANCEL, finished_at=1, worker="")
    with pytest.raises(ValueError, match="run_now writes"):
        written(lifecycle.RUN_NOW)


def test_written_over_an_earlier_transition_names_only_the_columns_it_adds() -> None:
    # A job enqueued after= others is inserted as enqueue, then made enqueue_waiting.
    waiting = written(lifecycle.ENQUEUE_WAITING, over=lifecycle.ENQUEUE, waiting_for=2, runs_after_failure=False)
    assert waiting == {"status": JobStatus.WAITING, "waiting_for": 2, "runs_after_failure": False}
    with pytest.raises(ValueError, match=r"enqueue_waiting writes \['runs_after_failure', 'status', 'waiting_for'\]"):
        written(lifecycle.ENQUEUE_WAITING, over=lifecycle.ENQUEUE, waiting_for=2)
    with pytest.raises(ValueError, match="enqueue_waiting writes"):
        written(lifecycle.ENQUEUE_WAITING, over=lifecycle.ENQUEUE, waiting_for=2, runs_after_failure=False, queue="q")


def test_allowed_is_the_sources_and_the_guard_as_sql() -> None:
    assert allowed(lifecycle.CANCEL) == Q(status__in=(JobStatus.WAITING, JobStatus.READY))
    assert allowed(lifecycle.UNBLOCK) == Q(status=JobStatus.WAITING) & Q(waiting_for=0)
    assert allowed(lifecycle.ADMIN_RETRY) == Q(status__in=(JobStatus.FAILED, JobStatus.CANCELLED))
    assert allowed(lifecycle.REQUEST_CANCEL) == Q(status=JobStatus.RUNNING) & Q(cancel_requested_at__isnull=True)


def test_the_ready_jobs_are_those_a_claim_is_allowed() -> None:
    due = Job.objects.enqueue(noop)
    Job.objects.enqueue(noop, delay=3600)
    assert list(Job.objects.ready()) == [due]
    assert list(Job.objects.filter(allowed(lifecycle.CLAIM))) == [due]


def test_the_status_case_picks_by_the_guards() -> None:
    kept, cancelled = claimed(2)
    Job.objects.cancel([cancelled.pk])
    picked = dict(Job.objects.annotate(picked=status_case(AFTER_RELEASE)).values_list("pk", "picked"))
    assert picked == {kept.pk: JobStatus.READY, cancelled.pk: JobStatus.CANCELLED}


def test_every_condition_is_checked_as_sql_or_said_where_it_is_checked() -> None:
    assert set(SQL_CONDITIONS) | set(CHECKED_ELSEWHERE) == set(Condition)
    assert not set(SQL_CONDITIONS) & set(CHECKED_ELSEWHERE)


# Decided once


class Calls(list[Any]):
    def spy(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def spied(*args: Any, **kwargs: Any) -> Any:
            self.append(function.__name__)
            return function(*args, **kwargs)

        return spied


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Each backoff drawn and each traceback formatted (``error_record``)."""
    made = Calls()
    for name in ("retry_delay", "error_record"):
        monkeypatch.setattr(failures, name, made.spy(getattr(failures, name)))
    return made


def counted(calls: Iterable[str]) -> dict[str, int]:
    return {name: list(calls).count(name) for name in ("retry_delay", "error_record")}


def test_a_django_tasks_failed_attempt_is_decided_once_for_its_signal_its_log_and_its_row(calls: Calls) -> None:
    fail.enqueue("boom")
    Job.objects.update(max_attempts=2)
    (job,) = Job.objects.claim(worker_id="w")
    outcome = execution.attempt(job, "w")
    assert outcome.failure is not None
    assert outcome.failure.transition is lifecycle.RETRY
    ended = Job.objects.finish_as_decided(worker_id="w", succeeded={}, failed={job: outcome.failure})
    assert [written.transition for written in ended] == [lifecycle.RETRY]
    assert counted(calls) == {"retry_delay": 1, "error_record": 1}
    # The row holds the delay that was decided: run_at is the attempt's start plus it, or about.
    job.refresh_from_db()
    assert outcome.failure.delay is not None
    assert job.status == JobStatus.READY
    assert job.errors == [outcome.failure.record]


def test_run_jobs_decides_each_failed_attempt_once(calls: Calls) -> None:
    fail.enqueue("boom")
    Job.objects.update(max_attempts=2)
    assert run_jobs(scheduled=True) == Ran(retried=1, failed=1)
    assert counted(calls) == {"retry_delay": 1, "error_record": 2}


def test_a_bare_exception_is_decided_by_the_finisher(calls: Calls) -> None:
    (job,) = claimed()
    assert Job.objects.finish(worker_id="w", failed={job: ValueError("boom")}) == 1
    assert counted(calls) == {"retry_delay": 1, "error_record": 1}


# Every status write, captured


def test_the_status_write_checker_reads_what_a_statement_moves_and_where_to() -> None:
    update = 'UPDATE "sqlqueue_job" SET "status" = %s, "worker" = %s WHERE "sqlqueue_job"."status" IN (%s, %s)'
    assert status_writes.pairs(update, ["CANCELLED", "w", "WAITING", "READY"]) == {
        ("WAITING", "CANCELLED"),
        ("READY", "CANCELLED"),
    }
    assert status_writes.pairs("INSERT INTO `sqlqueue_job` (`status`) VALUES ('READY'), ('READY')", None) == {
        (None, "READY")
    }
    assert not status_writes.declared("FAILED", "RUNNING")
    assert status_writes.declared("*", "RUNNING")


def test_every_write_path_in_this_process_makes_a_declared_transition() -> None:
    from django_sqlqueue.maintenance.rescue import rescue_worker

    checker = status_writes.StatusWrites(Job._meta.db_table)
    with connection.execute_wrapper(checker):
        parent = Job.objects.enqueue(noop)
        Job.objects.enqueue(noop, after=[parent])
        Job.objects.enqueue_many(Job.objects.build(noop, (index,), max_attempts=1) for index in range(3))
        Job.objects.enqueue(noop, (1,), unique_key="k")
        Job.objects.enqueue(noop, (2,), unique_key="k", on_conflict="replace")
        done, again, given_back, lost = Job.objects.claim(worker_id="w", limit=4)
        Job.objects.finish(worker_id="w", succeeded={done: 1}, failed={again: ValueError("boom")})
        Job.objects.release(worker_id="w", unstarted=[given_back])
        rescue_worker("w", ValueError("gone"), started=[lost.pk])
        Job.objects.cancel(list(Job.objects.values_list("pk", flat=True)))
        run_jobs()
    assert checker.undeclared() == {}
    # Every status these paths write was seen (the claim's WHERE is the claimer's own SQL).
    assert {target for _, target in checker.seen} == {status.value for status in JobStatus}
