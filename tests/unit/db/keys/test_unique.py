"""Unique jobs (``db/uniqueness.py``, ``ActiveKeyConstraint``): one active job per
``unique_key``, enforced by the database's index; skip, replace and raise on a conflict."""

from __future__ import annotations

import datetime
import re
import threading
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import OperationalError, connection, connections, transaction

from django_sqlqueue import job
from django_sqlqueue.db.keys import unique
from django_sqlqueue.exceptions import InvalidJobError, UniqueJobExists
from django_sqlqueue.models import Job, JobStatus
from tests.testapp.tasks import noop, sync_everything, sync_order, sync_order_once

pytestmark = pytest.mark.django_db


def finish(job: Job, status: str = JobStatus.SUCCESSFUL) -> None:
    Job.objects.filter(pk=job.pk).update(status=status)


def test_a_held_key_returns_its_holder_and_writes_nothing() -> None:
    first = Job.objects.enqueue(noop, (1,), unique_key="order-42")
    second = Job.objects.enqueue(noop, (2,), unique_key="order-42")
    assert (first.created, second.created, second.pk, second.args) == (True, False, first.pk, [1])
    assert Job.objects.filter(unique_key="order-42").count() == 1
    # Keys are compared exactly, on every database (MySQL's collations would not).
    assert Job.objects.enqueue(noop, unique_key="Order-42").created
    assert Job.objects.enqueue(noop, unique_key="order-42 ").created


@pytest.mark.parametrize("status", [JobStatus.SUCCESSFUL, JobStatus.FAILED, JobStatus.CANCELLED])
def test_the_key_is_free_again_once_its_job_ended(status: str) -> None:
    first = Job.objects.enqueue(noop, unique_key="k")
    finish(first, status)
    again = Job.objects.enqueue(noop, unique_key="k")
    assert again.created
    assert again.pk != first.pk


def test_a_running_holder_still_holds_it() -> None:
    first = Job.objects.enqueue(noop, unique_key="k")
    Job.objects.claim(worker_id="w")
    assert Job.objects.enqueue(noop, unique_key="k").pk == first.pk


def test_replace_updates_a_ready_holder_and_never_a_running_one() -> None:
    later = datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc)
    first = Job.objects.enqueue(noop, (1,), unique_key="k", delay=60)
    replaced = Job.objects.enqueue(noop, (2,), {"x": 1}, unique_key="k", run_at=later, on_conflict="replace")
    assert (replaced.pk, replaced.created, replaced.args, replaced.kwargs, replaced.run_at) == (
        first.pk,
        False,
        [2],
        {"x": 1},
        later,
    )
    assert Job.objects.get(pk=first.pk).args == [2]
    # Without a run time the replaced job is due now, by the database's clock.
    Job.objects.enqueue(noop, (3,), unique_key="k", on_conflict="replace")
    assert Job.objects.ready().get().args == [3]
    Job.objects.claim(worker_id="w")
    running = Job.objects.enqueue(noop, (4,), unique_key="k", on_conflict="replace")
    assert (running.status, running.args) == (JobStatus.RUNNING, [3])


def test_raise_names_the_holder_and_leaves_the_transaction_usable() -> None:
    first = Job.objects.enqueue(noop, unique_key="k")
    with transaction.atomic():
        with pytest.raises(UniqueJobExists, match="holds the unique_key 'k'") as raised:
            Job.objects.enqueue_many(
                [Job.objects.build(noop, unique_key="other"), Job.objects.build(noop, unique_key="k")],
                on_conflict="raise",
            )
        assert raised.value.job.pk == first.pk
        Job.objects.enqueue(noop)
    # All or none: "other" was rolled back with the savepoint.
    assert sorted(Job.objects.values_list("unique_key", flat=True), key=str) == [None, "k"]


def test_enqueue_many_reports_each_job() -> None:
    held = Job.objects.enqueue(noop, unique_key="held")
    jobs = [
        Job.objects.build(noop, (0,)),
        Job.objects.build(noop, (1,), unique_key="held"),
        Job.objects.build(noop, (2,), unique_key="new"),
        Job.objects.build(noop, (3,), unique_key="new"),
        Job.objects.build(noop, (4,)),
    ]
    results = Job.objects.enqueue_many(jobs, batch_size=2)
    assert [job.created for job in results] == [True, False, True, False, True]
    assert results[1].pk == held.pk
    assert results[3].pk == results[2].pk == jobs[2].pk
    assert all(job.pk for job in results[::2])  # ids set on every database, MySQL too
    assert Job.objects.count() == 4
    # The insert told its rows apart without writing the worker's column.
    assert set(Job.objects.values_list("worker", flat=True)) == {""}


def test_the_holder_ended_between_the_conflict_and_its_read(monkeypatch: pytest.MonkeyPatch) -> None:
    first = Job.objects.enqueue(noop, unique_key="k")
    read = unique.holders

    def ended_first(*args: Any) -> dict[str, Job]:
        monkeypatch.setattr(unique, "holders", read)
        finish(first)
        return read(*args)

    monkeypatch.setattr(unique, "holders", ended_first)
    again = Job.objects.enqueue(noop, unique_key="k")
    assert again.created
    assert again.pk != first.pk


def test_a_key_derived_from_named_arguments() -> None:
    one = Job.objects.enqueue(sync_order, (42,), {"note": "a"})
    assert one.unique_key == 'tests.testapp.tasks.sync_order:{"order_id":42}'
    assert Job.objects.enqueue(sync_order, kwargs={"order_id": 42, "note": "b"}).pk == one.pk
    assert Job.objects.enqueue(sync_order, (43,)).created
    # An explicit key wins; the queue is in the key when asked.
    assert Job.objects.enqueue(sync_order, (42,), unique_key="mine").created
    assert Job.objects.build(sync_everything, ("eu",)).unique_key == (
        'tests.testapp.tasks.sync_everything@default:{"full":false,"region":"eu"}'
    )
    long = Job.objects.build(sync_order, ("x" * 300,)).unique_key
    assert long is not None
    assert long.startswith("sha256:")
    assert len(long) == 71
    with pytest.raises(InvalidJobError, match="missing a required argument: 'order_id'"):
        Job.objects.build(sync_order)


@pytest.mark.parametrize("unique", [(), ("nope",), "order_id", False])
def test_unique_must_name_arguments(unique: Any) -> None:
    with pytest.raises(ImproperlyConfigured, match="unique must be True or names of its arguments"):
        job(unique=unique)(_other)


def _other(order_id: int) -> None:
    """Refused by the test above."""


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "unique_key must be a string of 1 to 255 characters or None, not ''"),
        ("x" * 256, "unique_key must be a string of 1 to 255 characters"),
        (42, "not 42"),
        ("a\x00", "holds the character NUL"),
    ],
)
def test_bad_keys_are_refused(key: Any, problem: str) -> None:
    with pytest.raises(InvalidJobError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        Job.objects.enqueue(noop, unique_key=key)
    assert not Job.objects.exists()


def test_an_unknown_on_conflict_is_refused() -> None:
    with pytest.raises(ValueError, match="on_conflict must be one of skip, replace, raise, not 'ignore'"):
        Job.objects.enqueue(noop, unique_key="k", on_conflict="ignore")


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor == 'sqlite'", reason="SQLite has one writer: nothing can be uncommitted")
@pytest.mark.parametrize("holder_commits", [True, False])
def test_an_uncommitted_holder_makes_the_insert_wait(holder_commits: bool) -> None:
    """Oban's trap: if the holder rolls back, the waiting insert must still write its job."""
    other = connections.create_connection("default")
    other.set_autocommit(False)
    table = other.ops.quote_name(Job._meta.db_table)
    try:
        with other.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (queue, task, args, kwargs, priority, max_attempts, status, attempts, "
                "worker, errors, last_error_class, run_at, enqueued_at, unique_key) VALUES ('default', "
                "'tests.testapp.tasks.noop', '[]', '{}', 0, 1, 'READY', 0, '', '[]', '', CURRENT_TIMESTAMP, "
                "CURRENT_TIMESTAMP, 'k')"
            )
        results: list[Job] = []
        waiter = threading.Thread(target=lambda: results.append(_enqueue_in_thread("k")))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive(), "the second insert waits for the first transaction"
        other.commit() if holder_commits else other.rollback()
        waiter.join(30)
        assert not waiter.is_alive()
        assert results[0].created is not holder_commits
        assert Job.objects.filter(unique_key="k").count() == 1
    finally:
        other.rollback()
        other.close()


def _enqueue_in_thread(key: str) -> Job:
    try:
        return Job.objects.enqueue(noop, unique_key=key)
    finally:
        connection.close()


def test_full_clean_compares_active_jobs_only() -> None:
    ended = Job.objects.enqueue(noop, unique_key="k")
    finish(ended)
    active = Job.objects.enqueue(noop, unique_key="k")
    ended.refresh_from_db()
    ended.full_clean()
    active.full_clean()
    duplicate = Job(task=active.task, queue="default", max_attempts=1, unique_key="k")
    with pytest.raises(ValidationError, match="Constraint “sqlqueue_job_unique_key” is violated"):
        duplicate.validate_constraints()


@pytest.mark.django_db(transaction=True)
def test_a_deadlock_victim_is_enqueued_again_in_a_transaction_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """MySQL/MariaDB may pick a unique enqueue as a deadlock's victim (its holder rolled
    back); with no transaction of the caller's to lose, the enqueue is tried again."""
    insert = unique.insert_unique
    failures: list[OperationalError] = []

    def deadlock_once(*args: Any) -> list[Job]:
        if not failures:
            failures.append(OperationalError("database is locked"))  # transient on any database
            insert(*args)  # written, then rolled back with the transaction
            raise failures[0]
        return insert(*args)

    monkeypatch.setattr(unique, "insert_unique", deadlock_once)
    written = Job.objects.enqueue(noop, unique_key="k")
    assert written.created
    assert list(Job.objects.values_list("pk", flat=True)) == [written.pk]

    # Inside the caller's transaction the error is the caller's: its transaction is gone.
    failures.clear()
    with pytest.raises(OperationalError), transaction.atomic():
        Job.objects.enqueue(noop, unique_key="other")
    assert list(Job.objects.values_list("pk", flat=True)) == [written.pk]


# Held until pruned


def test_a_key_held_until_pruned_outlives_its_job_until_the_row_is_deleted() -> None:
    first = Job.objects.enqueue(noop, unique_key="k", unique_until="pruned")
    assert first.unique_until_pruned
    finish(first)
    again = Job.objects.enqueue(noop, unique_key="k")
    assert not again.created
    assert again.pk == first.pk
    assert again.status == JobStatus.SUCCESSFUL
    # A finished holder is never changed: replace returns it as it is; raise raises.
    kept = Job.objects.enqueue(noop, (9,), unique_key="k", on_conflict="replace")
    assert (kept.pk, kept.args, kept.status) == (first.pk, [], JobStatus.SUCCESSFUL)
    with pytest.raises(UniqueJobExists):
        Job.objects.enqueue(noop, unique_key="k", on_conflict="raise")
    Job.objects.filter(pk=first.pk).delete()  # pruned
    assert Job.objects.enqueue(noop, unique_key="k").created


def test_a_key_held_while_active_is_free_beside_finished_jobs_that_do_not_keep_theirs() -> None:
    finish(Job.objects.enqueue(noop, unique_key="k"), JobStatus.FAILED)
    kept = Job.objects.enqueue(noop, unique_key="k", unique_until="pruned")
    assert kept.created
    finish(kept, JobStatus.CANCELLED)
    assert not Job.objects.enqueue(noop, unique_key="k").created


def test_enqueue_many_and_the_decorator_keep_keys_until_pruned() -> None:
    jobs = Job.objects.enqueue_many(
        [Job.objects.build(sync_order_once, (1,)), Job.objects.build(sync_order_once, (2,))]
    )
    assert all(job.created and job.unique_until_pruned for job in jobs)
    finish(jobs[0])
    again = Job.objects.enqueue_many(
        [Job.objects.build(sync_order_once, (1,)), Job.objects.build(sync_order_once, (3,))]
    )
    assert [job.created for job in again] == [False, True]
    assert again[0].pk == jobs[0].pk


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (
            {"unique_key": "k", "unique_until": "forever"},
            "unique_until must be one of 'finished', 'pruned', not 'forever'",
        ),
        ({"unique_until": "pruned"}, 'unique_until="pruned" needs a unique_key'),
    ],
)
def test_bad_unique_until_is_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidJobError, match=re.escape(problem)):
        Job.objects.enqueue(noop, **options)
    assert not Job.objects.exists()


def test_the_decorator_refuses_a_bad_unique_until() -> None:
    with pytest.raises(ImproperlyConfigured, match="unique_until must be one of 'finished', 'pruned', not 'later'"):
        job(unique=True, unique_until="later")(_other)
