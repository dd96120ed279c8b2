"""``Job.objects.finish()``, written by ``db/finishing.py``: outcomes in one UPDATE,
failed attempts' errors and retries written, and no overwriting a job another worker
holds. What a failed attempt becomes (its backoff, its error record) is tested with
``rules/failures.py``, in ``tests/unit/rules/test_failures.py``."""

from __future__ import annotations

import datetime
import json
from collections import Counter
from typing import Any

import pytest
from django.db import DatabaseError, OperationalError, connection
from django.db.models.sql import Query
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.db import engines, finishing
from django_sqlqueue.db.engines.errors import is_unavailable, is_unwritable
from django_sqlqueue.exceptions import WorkerLost
from django_sqlqueue.models import Job, JobStatus
from tests.support.attempts import claim, db_now, raised
from tests.support.locks import held_elsewhere, impatient
from tests.support.severed import needs_a_server, sever_outcome_writes
from tests.support.spies import counting
from tests.support.unstorable import max_allowed_packet, refused_json
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db

UTC = datetime.timezone.utc
PAST = datetime.datetime(2001, 1, 1, tzinfo=UTC)


def make_due(job: Job) -> None:
    """Skip the backoff: the retry is due now."""
    Job.objects.filter(pk=job.pk).update(run_at=PAST)


def updates(queries: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in queries.captured_queries if query["sql"].lstrip().upper().startswith("UPDATE")]


# Successes


def test_successes_are_written_in_one_update() -> None:
    results: list[Any] = [
        {"total": 3, "rows": [1, 2, {"x": None}]},
        [1, "two", 3.5, False],
        "done",
        42,
        None,
        {"total": 4},
        ["another list"],
        "",
        -7.25,
    ]
    jobs = claim(len(results))
    with CaptureQueriesContext(connection) as queries:
        written = Job.objects.finish(worker_id="w", succeeded=dict(zip(jobs, results, strict=True)))
    assert written == len(results)
    assert len(updates(queries)) == 1

    for job, result in zip(jobs, results, strict=True):
        job.refresh_from_db()
        assert (job.status, job.result, job.errors, job.attempts) == (JobStatus.SUCCESSFUL, result, [], 1)
        assert job.finished_at is not None
        assert job.started_at is not None
        assert job.finished_at >= job.started_at


def test_finishes_on_one_connection_compile_against_what_it_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each batch compiles its values and its fence against the query and compiler its
    connection made once: no queryset is cloned and no compiler set up for a batch,
    whatever its outcomes (the same for all, results that differ, a retry's backoff)."""
    jobs = claim(6)
    made: list[Any] = []
    monkeypatch.setattr(finishing._OutcomeUpdate, "__init__", counting(finishing._OutcomeUpdate.__init__, made))
    engines.forget()
    compilers: list[Query] = []
    get_compiler = Query.get_compiler

    def watched(self: Query, *args: Any, **kwargs: Any) -> Any:
        compilers.append(self)
        return get_compiler(self, *args, **kwargs)

    monkeypatch.setattr(Query, "get_compiler", watched)
    written = [
        Job.objects.finish(worker_id="w", succeeded={jobs[0]: None, jobs[1]: None}),
        Job.objects.finish(worker_id="w", succeeded={jobs[2]: {"r": [1]}, jobs[3]: 2}),
        Job.objects.finish(worker_id="w", succeeded={jobs[4]: None}, failed={jobs[5]: raised("again")}),
    ]
    monkeypatch.undo()
    assert written == [2, 2, 2]
    assert len(made) == len(compilers) == 1
    stored = dict(Job.objects.values_list("pk", "status"))
    assert [stored[job.pk] for job in jobs] == [JobStatus.SUCCESSFUL] * 5 + [JobStatus.READY]
    assert Job.objects.get(pk=jobs[2].pk).result == {"r": [1]}
    assert Job.objects.get(pk=jobs[5].pk).errors[0]["message"] == "again"


def test_finished_at_comes_from_the_database_clock() -> None:
    (job,) = claim()
    before = db_now()
    Job.objects.finish(worker_id="w", succeeded={job: None})
    after = db_now()
    job.refresh_from_db()
    # On PostgreSQL the clock stands still in the test's transaction: Python's time would be later.
    assert job.finished_at is not None
    assert before <= job.finished_at <= after


def test_one_success_and_equal_results() -> None:
    jobs = claim(3)
    with CaptureQueriesContext(connection) as queries:
        assert Job.objects.finish(worker_id="w", succeeded=dict.fromkeys(jobs, "same")) == 3
    assert len(updates(queries)) == 1
    assert list(Job.objects.values_list("status", "result").distinct()) == [(JobStatus.SUCCESSFUL, "same")]


def test_results_equal_in_python_but_not_in_json_stay_apart() -> None:
    # True == 1 == 1.0, False == 0 == 0.0 in Python, and (1, True) == (1, 1), but not once stored as JSON.
    results: list[Any] = [1, True, 1.0, 0, False, 1.5, "1", (1, 1), (1, True), [0], [False], 0.0]
    jobs = claim(len(results))
    Job.objects.finish(worker_id="w", succeeded=dict(zip(jobs, results, strict=True)))
    stored = [json.dumps(Job.objects.get(pk=job.pk).result) for job in jobs]
    assert stored == ["1", "true", "1.0", "0", "false", "1.5", '"1"', "[1, 1]", "[1, true]", "[0]", "[false]", "0.0"]


def test_tuple_result_is_stored_as_a_list() -> None:
    # A tuple is accepted as JSON (it comes back as a list), even when it holds lists or dicts.
    results: list[Any] = [(1, "two"), ([1, 2], {"total": 3})]
    jobs = claim(len(results))
    assert Job.objects.finish(worker_id="w", succeeded=dict(zip(jobs, results, strict=True))) == 2
    assert [Job.objects.get(pk=job.pk).result for job in jobs] == [[1, "two"], [[1, 2], {"total": 3}]]


def test_success_does_not_change_run_at_or_started_at() -> None:
    (job,) = claim()
    run_at, started_at = Job.objects.filter(pk=job.pk).values_list("run_at", "started_at").get()
    Job.objects.finish(worker_id="w", succeeded={job: 1})
    job.refresh_from_db()
    assert (job.run_at, job.started_at, job.worker) == (run_at, started_at, "w")


@pytest.mark.parametrize(
    ("result", "kind"),
    [
        ({1, 2}, "a set"),
        (datetime.datetime(2030, 1, 1, tzinfo=UTC), "a datetime.datetime"),
        (b"bytes", "a bytes"),
    ],
)
def test_result_that_is_not_json_fails_the_attempt(result: Any, kind: str) -> None:
    (job,) = claim()
    assert Job.objects.finish(worker_id="w", succeeded={job: result}) == 1
    job.refresh_from_db()
    assert (job.status, job.result, job.finished_at) == (JobStatus.READY, None, None)
    (error,) = job.errors
    assert error["exception_class_path"] == "django_sqlqueue.exceptions.InvalidJobError"
    assert error["message"] == (
        f"tests.testapp.tasks.noop finished, but the return value is {kind}, which is not JSON: "
        "pass only None, bool, int, float, str, list and dict."
    )
    assert error["attempt"] == 1


def test_result_with_nan_fails_the_last_attempt() -> None:
    (job,) = claim(max_attempts=1)
    Job.objects.finish(worker_id="w", succeeded={job: {"ratio": float("nan")}})
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.errors[0]["message"] == (
        "tests.testapp.tasks.noop finished, but the return value['ratio'] is nan, which JSON cannot represent."
    )


# Failures


def test_the_last_errors_class_is_kept_in_its_own_column() -> None:
    class Boom(Exception):
        pass

    (job,) = claim(max_attempts=3)
    assert job.last_error_class == ""
    Job.objects.finish(worker_id="w", failed={job: raised("first")})
    make_due(job)
    (again,) = Job.objects.claim(worker_id="w")
    Job.objects.finish(worker_id="w", failed={again: Boom()})
    job.refresh_from_db()
    assert job.last_error_class == job.errors[-1]["exception_class_path"]
    assert job.last_error_class.endswith("<locals>.Boom")


def test_a_class_path_too_long_for_the_column_is_cut() -> None:
    long_name = type("E" * 300, (Exception,), {})
    (job,) = claim()
    Job.objects.finish(worker_id="w", failed={job: long_name()})
    job.refresh_from_db()
    assert job.errors[0]["exception_class_path"] == f"{__name__}.{'E' * 300}"
    assert job.last_error_class == job.errors[0]["exception_class_path"][:255]


def test_every_attempt_keeps_its_error() -> None:
    (job,) = claim(max_attempts=3)
    Job.objects.finish(worker_id="w", failed={job: raised("first")})
    make_due(job)
    (again,) = Job.objects.claim(worker_id="w2")
    assert (again.pk, again.attempts) == (job.pk, 2)
    assert len(again.errors) == 1
    Job.objects.finish(worker_id="w2", failed={again: raised("second")})

    job.refresh_from_db()
    assert job.status == JobStatus.READY
    assert [(e["attempt"], e["worker"], e["message"]) for e in job.errors] == [(1, "w", "first"), (2, "w2", "second")]
    assert all("in failing_task_body" in e["traceback"] for e in job.errors)


def test_last_attempt_fails_the_job() -> None:
    (job,) = claim(max_attempts=2)
    Job.objects.finish(worker_id="w", failed={job: raised("one")})
    job.refresh_from_db()
    assert (job.status, job.finished_at) == (JobStatus.READY, None)
    make_due(job)
    (again,) = Job.objects.claim(worker_id="w")
    run_at = Job.objects.filter(pk=job.pk).values_list("run_at", flat=True).get()
    before = db_now()
    Job.objects.finish(worker_id="w", failed={again: raised("two")})
    after = db_now()

    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.FAILED, 2)
    assert job.finished_at is not None
    assert before <= job.finished_at <= after
    assert job.run_at == run_at  # no retry is scheduled
    assert [e["attempt"] for e in job.errors] == [1, 2]
    assert Job.objects.claim(worker_id="w") == []


def test_single_attempt_job_fails_at_once() -> None:
    (job,) = claim(max_attempts=1)
    Job.objects.finish(worker_id="w", failed={job: raised("only")})
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.finished_at is not None


def test_failure_after_a_thousand_attempts_is_still_recorded() -> None:
    Job.objects.enqueue(noop, max_attempts=5000)
    Job.objects.update(attempts=1100)
    (job,) = Job.objects.claim(worker_id="w")
    (other,) = claim()
    assert Job.objects.finish(worker_id="w", failed={job: raised("again")}, succeeded={other: 1}) == 2
    job.refresh_from_db()
    assert (job.status, job.attempts, len(job.errors)) == (JobStatus.READY, 1101, 1)
    assert Job.objects.get(pk=other.pk).status == JobStatus.SUCCESSFUL


# Fencing: only the worker that holds the job, at the attempt it claimed, writes it.


def test_another_worker_cannot_finish_the_job() -> None:
    (job,) = claim(worker_id="owner")
    before = Job.objects.filter(pk=job.pk).values().get()
    stolen = Job.objects.get(pk=job.pk)
    with CaptureQueriesContext(connection) as queries:
        assert Job.objects.finish(worker_id="thief", succeeded={stolen: "mine"}) == 0
        assert Job.objects.finish(worker_id="thief", failed={stolen: raised("no")}) == 0
    assert len(updates(queries)) == 2
    assert Job.objects.filter(pk=job.pk).values().get() == before


def test_a_stale_attempt_cannot_overwrite_the_next() -> None:
    (stale,) = claim(worker_id="w")
    # The job came back to the queue (e.g. a rescue) and the same worker claimed it again.
    Job.objects.filter(pk=stale.pk).update(status=JobStatus.READY, run_at=PAST)
    (current,) = Job.objects.claim(worker_id="w")
    assert (current.pk, current.attempts, stale.attempts) == (stale.pk, 2, 1)
    before = Job.objects.filter(pk=stale.pk).values().get()

    assert Job.objects.finish(worker_id="w", succeeded={stale: "old"}) == 0
    assert Job.objects.finish(worker_id="w", failed={stale: raised("old")}) == 0
    assert Job.objects.filter(pk=stale.pk).values().get() == before

    assert Job.objects.finish(worker_id="w", succeeded={current: "new"}) == 1
    current.refresh_from_db()
    assert (current.status, current.result, current.attempts) == (JobStatus.SUCCESSFUL, "new", 2)


def test_a_batch_at_several_attempts_writes_each_job_held_at_its_own() -> None:
    """The fence groups a batch's ids by the attempt each was claimed at: a job of the
    batch at attempt 2 is written, and so is one at attempt 1, but not one whose
    attempt moved on since."""
    (second,) = claim(worker_id="w", max_attempts=3)
    assert Job.objects.finish(worker_id="w", failed={second: raised("once")}) == 1
    make_due(second)
    (second,) = Job.objects.claim(worker_id="w")
    first, stale = claim(2, worker_id="w")
    Job.objects.filter(pk=stale.pk).update(attempts=stale.attempts + 1)
    assert (second.attempts, first.attempts, stale.attempts) == (2, 1, 1)

    written = Job.objects.finish(worker_id="w", succeeded={second: "2", first: "1", stale: "stale"})
    assert written == 2
    assert dict(Job.objects.values_list("pk", "result")) == {second.pk: "2", first.pk: "1", stale.pk: None}


def test_a_finished_job_cannot_be_finished_again() -> None:
    (job,) = claim()
    assert Job.objects.finish(worker_id="w", succeeded={job: 1}) == 1
    assert Job.objects.finish(worker_id="w", failed={job: raised("late")}) == 0
    job.refresh_from_db()
    assert (job.status, job.result, job.errors) == (JobStatus.SUCCESSFUL, 1, [])


def test_only_the_held_jobs_of_a_batch_are_written() -> None:
    jobs = claim(4)
    Job.objects.filter(pk=jobs[1].pk).update(worker="rescuer")
    Job.objects.filter(pk=jobs[2].pk).update(status=JobStatus.CANCELLED)
    assert Job.objects.finish(worker_id="w", succeeded=dict.fromkeys(jobs, "ok")) == 2
    assert dict(Job.objects.values_list("pk", "status")) == {
        jobs[0].pk: JobStatus.SUCCESSFUL,
        jobs[1].pk: JobStatus.RUNNING,
        jobs[2].pk: JobStatus.CANCELLED,
        jobs[3].pk: JobStatus.SUCCESSFUL,
    }


# Mixed batches


def test_mixed_batch_in_one_update() -> None:
    winners = claim(3, max_attempts=3)
    retried = claim(2, max_attempts=3)
    spent = claim(1, max_attempts=1)
    run_at = dict(Job.objects.values_list("pk", "run_at"))
    with CaptureQueriesContext(connection) as queries:
        written = Job.objects.finish(
            worker_id="w",
            succeeded={winners[0]: {"a": 1}, winners[1]: None, winners[2]: "c", retried[1]: {1, 2}},
            failed={retried[0]: raised("retry me"), spent[0]: raised("give up")},
        )
    assert written == 6
    assert len(updates(queries)) == 1

    stored = {job.pk: job for job in Job.objects.all()}
    for job, result in zip(winners, [{"a": 1}, None, "c"], strict=True):
        row = stored[job.pk]
        assert (row.status, row.result, row.errors, row.run_at) == (JobStatus.SUCCESSFUL, result, [], run_at[job.pk])
        assert row.finished_at is not None
    for job, message in zip(retried, ["retry me", "tests.testapp.tasks.noop finished, but"], strict=True):
        row = stored[job.pk]
        assert (row.status, row.result, row.finished_at) == (JobStatus.READY, None, None)
        assert row.run_at > run_at[job.pk]
        assert row.errors[0]["message"].startswith(message)
    row = stored[spent[0].pk]
    assert (row.status, row.run_at, row.errors[0]["message"]) == (JobStatus.FAILED, run_at[spent[0].pk], "give up")
    assert row.finished_at is not None


def test_a_batch_is_counted_by_the_status_each_job_got() -> None:
    winners = claim(2, max_attempts=3)
    (retried,) = claim(max_attempts=3)
    (spent,) = claim(max_attempts=1)
    written = Job.objects.finish_by_status(
        worker_id="w",
        succeeded=dict.fromkeys(winners, 1),
        failed={retried: raised("retry me"), spent: raised("give up")},
    )
    assert written == Counter({JobStatus.SUCCESSFUL: 2, JobStatus.READY: 1, JobStatus.FAILED: 1})


def test_a_job_taken_away_is_not_counted_even_when_its_rescue_wrote_the_same_status() -> None:
    """The fence left it out; its rescuer wrote ``READY`` too, with ``WorkerLost``."""
    kept, taken = claim(2, max_attempts=3)
    assert Job.objects.finish(worker_id="w", failed={taken: WorkerLost("its lease ran out")}) == 1
    written = Job.objects.finish_by_status(worker_id="w", failed={kept: raised("retry me"), taken: raised("retry me")})
    assert written == Counter({JobStatus.READY: 1})
    assert dict(Job.objects.values_list("pk", "last_error_class")) == {
        kept.pk: "builtins.ValueError",
        taken.pk: "django_sqlqueue.exceptions.WorkerLost",
    }


def test_a_job_cannot_both_succeed_and_fail() -> None:
    jobs = claim(2)
    with pytest.raises(ValueError, match=rf"^Jobs \[{jobs[1].pk}\] cannot both succeed and fail\.$"):
        Job.objects.finish(worker_id="w", succeeded=dict.fromkeys(jobs, 1), failed={jobs[1]: raised("x")})
    assert set(Job.objects.values_list("status", flat=True)) == {JobStatus.RUNNING}


def test_finishing_nothing_writes_nothing() -> None:
    with CaptureQueriesContext(connection) as queries:
        assert Job.objects.finish(worker_id="w") == 0
        assert Job.objects.finish(worker_id="w", succeeded={}, failed={}) == 0
    assert queries.captured_queries == []


# SQLQUEUE_RETENTION = {"SUCCESSFUL": 0}: a success deletes its job.


def deletes(queries: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in queries.captured_queries if query["sql"].lstrip().upper().startswith("DELETE")]


@override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": 0})
def test_successes_kept_for_no_time_are_deleted_and_the_rest_written() -> None:
    winners = claim(3, max_attempts=3)
    (unstorable,) = claim(max_attempts=3)
    (spent,) = claim(max_attempts=1)
    with CaptureQueriesContext(connection) as queries:
        written = Job.objects.finish(
            worker_id="w",
            succeeded={winners[0]: {"a": 1}, winners[1]: None, winners[2]: "c", unstorable: {1, 2}},
            failed={spent: raised("give up")},
        )
    assert written == 5
    assert (len(deletes(queries)), len(updates(queries))) == (1, 1)
    stored = {job.pk: job for job in Job.objects.all()}
    assert set(stored) == {unstorable.pk, spent.pk}
    assert stored[unstorable.pk].status == JobStatus.READY
    assert stored[unstorable.pk].errors[0]["exception_class_path"] == "django_sqlqueue.exceptions.InvalidJobError"
    assert (stored[spent.pk].status, stored[spent.pk].errors[0]["message"]) == (JobStatus.FAILED, "give up")


@override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": 0})
def test_only_held_jobs_are_deleted_by_their_success() -> None:
    jobs = claim(4)
    Job.objects.filter(pk=jobs[1].pk).update(worker="rescuer")
    Job.objects.filter(pk=jobs[2].pk).update(status=JobStatus.CANCELLED)
    Job.objects.filter(pk=jobs[3].pk).update(attempts=2)
    with CaptureQueriesContext(connection) as queries:
        assert Job.objects.finish(worker_id="w", succeeded=dict.fromkeys(jobs, "ok")) == 1
    assert updates(queries) == []
    assert dict(Job.objects.values_list("pk", "status")) == {
        jobs[1].pk: JobStatus.RUNNING,
        jobs[2].pk: JobStatus.CANCELLED,
        jobs[3].pk: JobStatus.RUNNING,
    }


@override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": 1})
def test_successes_kept_for_any_time_are_written() -> None:
    (job,) = claim()
    assert Job.objects.finish(worker_id="w", succeeded={job: "ok"}) == 1
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.SUCCESSFUL, "ok")


# Outcomes the database cannot store as they are

INVALID_JOB = "django_sqlqueue.exceptions.InvalidJobError"


@pytest.mark.skipif(
    connection.vendor == "sqlite",
    reason="SQLite refuses only JSON nested past 1000 levels, which the return value's check refuses first",
)
@pytest.mark.parametrize(
    "in_transaction",
    [
        pytest.param(True, id="in-a-transaction"),
        pytest.param(False, id="autocommit", marks=pytest.mark.django_db(transaction=True)),
    ],
)
def test_a_result_the_database_refuses_fails_that_job_alone(in_transaction: bool) -> None:
    """A savepoint keeps a caller's transaction usable after the refused batch (PostgreSQL)."""
    assert connection.in_atomic_block is in_transaction
    good, bad = claim(2, max_attempts=3)
    (spent,) = claim(max_attempts=1)
    (failure,) = claim(max_attempts=3)
    written = Job.objects.finish_by_status(
        worker_id="w",
        succeeded={good: "fine", bad: refused_json(), spent: refused_json()},
        failed={failure: raised("its own error")},
    )
    assert written == Counter({JobStatus.SUCCESSFUL: 1, JobStatus.READY: 2, JobStatus.FAILED: 1})
    stored = {job.pk: job for job in Job.objects.all()}
    assert (stored[good.pk].status, stored[good.pk].result, stored[good.pk].errors) == (
        JobStatus.SUCCESSFUL,
        "fine",
        [],
    )
    for job, status in [(bad, JobStatus.READY), (spent, JobStatus.FAILED)]:
        (record,) = stored[job.pk].errors
        assert (stored[job.pk].status, stored[job.pk].result) == (status, None)
        assert record["exception_class_path"] == INVALID_JOB
        assert record["message"].startswith("tests.testapp.tasks.noop finished, but ")
        assert "return value" in record["message"]
    assert [record["message"] for record in stored[failure.pk].errors] == ["its own error"]
    assert stored[failure.pk].status == JobStatus.READY


@pytest.mark.django_db(transaction=True)  # the server ends the connection, and with it any transaction
@pytest.mark.skipif(connection.vendor != "mysql", reason="MariaDB's max_allowed_packet bounds a statement")
@pytest.mark.parametrize(
    ("times", "seen"),
    [
        pytest.param(1, "(1153, \"Got a packet bigger than 'max_allowed_packet' bytes\")", id="just-over"),
        # Far over the limit, the client sees only the connection ending.
        pytest.param(4, "(2006, 'Server has gone away')", id="far-over"),
    ],
)
def test_a_result_larger_than_max_allowed_packet_fails_that_job_alone(times: int, seen: str) -> None:
    good, bad = claim(2, max_attempts=3)
    written = Job.objects.finish(worker_id="w", succeeded={good: "fine", bad: "x" * (times * max_allowed_packet())})
    assert written == 2
    good.refresh_from_db()
    bad.refresh_from_db()
    assert (good.status, good.result) == (JobStatus.SUCCESSFUL, "fine")
    (record,) = bad.errors
    assert (bad.status, bad.result, record["exception_class_path"]) == (JobStatus.READY, None, INVALID_JOB)
    assert record["message"] == (
        f"tests.testapp.tasks.noop finished, but the database refused to store its return value: {seen}"
    )


@pytest.mark.django_db(transaction=True)  # the server ends the connection, and with it any transaction
@pytest.mark.skipif(connection.vendor != "mysql", reason="MariaDB's max_allowed_packet bounds a statement")
def test_a_job_whose_errors_leave_no_room_for_the_refusal_fails_with_its_errors_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    (job,) = claim(max_attempts=3)
    # Earlier errors that the database took, just short of its largest statement: with
    # one more error they are too large.
    earlier = [{"message": "x" * (max_allowed_packet() - 400)}]
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {Job._meta.db_table} SET errors = %s WHERE id = %s", [json.dumps(earlier), job.pk])
    job.refresh_from_db()
    assert Job.objects.finish(worker_id="w", succeeded={job: "x" * max_allowed_packet()}) == 1
    job.refresh_from_db()
    assert (job.status, job.result, job.errors) == (JobStatus.FAILED, None, earlier)
    assert job.finished_at is not None
    (logged,) = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert logged.startswith(
        f"Job {job.pk}: tests.testapp.tasks.noop finished, but the database refused to store its return value: "
    )
    assert logged.endswith(
        "and the error saying so ((1153, \"Got a packet bigger than 'max_allowed_packet' bytes\")); it is FAILED"
    )


# A lost connection is the database unavailable, never a refusal


@pytest.mark.django_db(transaction=True)  # the server ends the connection, and with it any transaction
@needs_a_server
def test_a_finish_whose_session_is_killed_twice_in_a_row_writes_nothing_and_refuses_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Killed (an administrator, a failover, a proxy) at the batch's UPDATE, then at the
    one job's UPDATE on a fresh connection: each finish raises the lost connection and
    writes nothing, and the next one writes the outcomes as the attempts ended."""
    done, failure = claim(2, max_attempts=3)
    sever_outcome_writes(monkeypatch, times=2)
    for _ in range(2):
        with pytest.raises(DatabaseError) as excinfo:
            Job.objects.finish(worker_id="w", succeeded={done: {"total": 3}}, failed={failure: raised("its own")})
        assert is_unavailable(excinfo.value)
        assert not is_unwritable(excinfo.value)
        rows = Job.objects.order_by("pk").values_list("status", "attempts", "errors")
        assert list(rows) == [(JobStatus.RUNNING, 1, []), (JobStatus.RUNNING, 1, [])]
    assert Job.objects.finish(worker_id="w", succeeded={done: {"total": 3}}, failed={failure: raised("its own")}) == 2
    done.refresh_from_db()
    failure.refresh_from_db()
    assert (done.status, done.result, done.attempts, done.errors) == (JobStatus.SUCCESSFUL, {"total": 3}, 1, [])
    assert (failure.status, [record["message"] for record in failure.errors]) == (JobStatus.READY, ["its own"])


@pytest.mark.slow  # MySQL's shortest lock wait is a second, and the finish retries it eight times
@pytest.mark.django_db(transaction=True)  # the lock is held from another connection
def test_a_finish_held_up_by_a_lock_past_its_retries_raises_it_and_refuses_nothing() -> None:
    """SQLite's write lock held by another process (or a row lock elsewhere) past every
    retry: the database is busy, not refusing the outcome."""
    (job,) = claim()
    with held_elsewhere(job), impatient(), pytest.raises(OperationalError) as excinfo:
        Job.objects.finish(worker_id="w", succeeded={job: "ok"})
    assert is_unavailable(excinfo.value)
    job.refresh_from_db()
    assert (job.status, job.errors) == (JobStatus.RUNNING, [])
    assert Job.objects.finish(worker_id="w", succeeded={job: "ok"}) == 1
    job.refresh_from_db()
    assert (job.status, job.result, job.errors) == (JobStatus.SUCCESSFUL, "ok", [])


@pytest.mark.django_db(transaction=True)  # the server ends the connection, and with it any transaction
@pytest.mark.skipif(connection.vendor != "mysql", reason="MariaDB's max_allowed_packet bounds a statement")
def test_a_result_larger_than_max_allowed_packet_after_a_killed_session_fails_its_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both end the connection, and far over the limit the client sees the same words
    for both ('server has gone away'): the statement's size tells the refusal. The
    batch's UPDATE is refused; the good job's own, killed, is not."""
    good, bad = claim(2, max_attempts=3)
    large = "x" * (4 * max_allowed_packet())
    sever_outcome_writes(monkeypatch, times=1, after=1)
    with pytest.raises(DatabaseError) as excinfo:
        Job.objects.finish(worker_id="w", succeeded={good: "fine", bad: large})
    assert is_unavailable(excinfo.value)
    rows = Job.objects.order_by("pk").values_list("status", "errors")
    assert list(rows) == [(JobStatus.RUNNING, []), (JobStatus.RUNNING, [])]
    assert Job.objects.finish(worker_id="w", succeeded={good: "fine", bad: large}) == 2
    good.refresh_from_db()
    bad.refresh_from_db()
    assert (good.status, good.result, good.errors) == (JobStatus.SUCCESSFUL, "fine", [])
    (record,) = bad.errors
    assert (bad.status, bad.result, record["exception_class_path"]) == (JobStatus.READY, None, INVALID_JOB)
    assert record["message"] == (
        "tests.testapp.tasks.noop finished, but the database refused to store its return value: "
        "(2006, 'Server has gone away')"
    )
