"""MySQL/MariaDB's inserts that cannot tell their rows otherwise
(``MySQL.insert_marked``): each statement writes a token of its own into
``insert_token`` and tells its rows by it, both as MariaDB does it (``RETURNING``, which
also returns a key's holder) and as MySQL 8 does it (no ``RETURNING``: read back)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.db import inserting
from django_sqlqueue.db.engines.mysql import MySQL
from django_sqlqueue.models import Job, JobTag
from tests.testapp.tasks import noop

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'mysql'", reason="only MySQL/MariaDB tell their rows by a token"),
]


@pytest.fixture(params=["returning", "read back"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """MariaDB's ``RETURNING``, or MySQL 8's way (no ``RETURNING``) on the same server."""
    if request.param == "read back":
        monkeypatch.setattr(MySQL, "returns_rows", False)
    return str(request.param)


def test_a_keyed_enqueue_many_skips_exactly_the_jobs_whose_key_was_held(way: str) -> None:
    held = {f"k{n}": Job.objects.enqueue(noop, ["held"], unique_key=f"k{n}") for n in range(0, 40, 2)}
    built = [Job.objects.build(noop, [n], unique_key=f"k{n}") for n in range(40)]
    built[5:5] = [Job.objects.build(noop, ["no key"])]  # a job without a key among them
    with CaptureQueriesContext(connection) as queries:
        jobs = Job.objects.enqueue_many(built, batch_size=7)
    skipped = {job.unique_key for job in jobs if not job.created}
    assert skipped == set(held)
    assert all(job.pk == held[str(job.unique_key)].pk for job in jobs if not job.created)
    written = {job.pk: job.args for job in jobs if job.created}
    assert written == dict(Job.objects.exclude(args=["held"]).values_list("pk", "args"))
    assert not [q for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]
    assert set(Job.objects.values_list("worker", flat=True)) == {""}


def test_many_tagged_jobs_get_the_ids_of_their_own_rows(way: str) -> None:
    Job.objects.enqueue(noop, ["before"])
    jobs = Job.objects.enqueue_many([Job.objects.build(noop, [n], tags=[f"t{n}"]) for n in range(9)], batch_size=4)
    assert {tag.job_id: tag.tag for tag in JobTag.objects.all()} == {job.pk: f"t{job.args[0]}" for job in jobs}
    assert dict(Job.objects.filter(pk__in=[job.pk for job in jobs]).values_list("pk", "args")) == {
        job.pk: job.args for job in jobs
    }


def test_a_held_key_gives_back_the_job_unsaved_and_leaves_the_holder_as_it_was(way: str) -> None:
    holder = Job.objects.enqueue(noop, unique_key="k")
    before = list(Job.objects.values_list("pk", "insert_token", "worker"))
    assert before[0][1] is not None  # the holder's own insert wrote its token
    job = Job.objects.build(noop, unique_key="k")
    assert inserting.insert([job], "default", 100) == [job]
    assert job.pk is None
    assert job._state.adding
    assert list(Job.objects.values_list("pk", "insert_token", "worker")) == before == [(holder.pk, before[0][1], "")]


@pytest.mark.django_db(transaction=True)
def test_a_key_enqueued_by_two_transactions_at_once_is_written_once(way: str) -> None:
    """The second waits for the first's uncommitted holder, then gets its job back unsaved."""
    holding, release = threading.Event(), threading.Event()
    first: list[Job] = []

    def hold() -> None:
        try:
            with transaction.atomic():
                first.append(Job.objects.enqueue(noop, ["first"], unique_key="k"))
                holding.set()
                release.wait(30)
        finally:
            connection.close()

    second = Job.objects.build(noop, ["second"], unique_key="k")
    skipped: list[Job] = []

    def wait() -> None:
        try:
            with transaction.atomic():
                skipped.extend(inserting.insert([second], "default", 100))
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(30)
    waiter = threading.Thread(target=wait)
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive(), "the second insert waits for the first transaction"
    release.set()
    holder.join(30)
    waiter.join(30)
    assert skipped == [second]
    assert second.pk is None
    assert second._state.adding
    assert list(Job.objects.values_list("pk", "args")) == [(first[0].pk, ["first"])]
