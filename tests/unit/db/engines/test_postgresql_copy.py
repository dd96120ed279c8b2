"""``db/engines/postgresql_copy.py``: ``enqueue_many`` writes many jobs by ``COPY`` on PostgreSQL, and
gives them back saved, with the ids and times the table holds."""

from __future__ import annotations

import datetime

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_sqlqueue.models import Job, JobStatus, JobTag
from tests.support.zones import COMBINATIONS, zones
from tests.testapp.tasks import noop
from tests.unit.db.test_inserting import one_job_a_queue  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY is PostgreSQL's"),
]

FIELDS = ("id", "task", "queue", "args", "kwargs", "priority", "run_at", "enqueued_at", "expires_at", "status", "meta")


def fields(job: Job) -> tuple[object, ...]:
    return tuple(getattr(job, name) for name in FIELDS)


def test_many_jobs_go_by_copy_after_one_statement_that_takes_their_ids() -> None:
    jobs = [Job.objects.build(noop, [n]) for n in range(2500)]
    with CaptureQueriesContext(connection) as queries:
        written = Job.objects.enqueue_many(jobs, batch_size=1000)
    assert [query["sql"].split()[0] for query in queries] == ["SELECT", "COPY"]
    assert "nextval" in queries[0]["sql"]
    assert written == jobs
    assert [job.args for job in Job.objects.order_by("id")] == [[n] for n in range(2500)]


def test_the_jobs_come_back_as_the_table_holds_them() -> None:
    when = datetime.datetime(2031, 1, 1, tzinfo=datetime.timezone.utc)
    jobs = Job.objects.enqueue_many(
        [
            Job.objects.build(noop, [1], meta={"from": "test"}),
            Job.objects.build(noop, kwargs={"a": 1}, delay=60, priority=5),
            Job.objects.build(noop, run_at=when, expires_at=when + datetime.timedelta(days=1)),
            Job.objects.build(noop, expires_in=3600),
        ]
    )
    with CaptureQueriesContext(connection) as queries:
        assert [fields(job) for job in jobs] == [fields(job) for job in Job.objects.order_by("id")]
    assert len(queries) == 1  # nothing of the returned jobs loads anew
    now = jobs[0].enqueued_at
    assert [job.run_at for job in jobs] == [now, now + datetime.timedelta(seconds=60), when, now]
    assert jobs[3].expires_at == now + datetime.timedelta(hours=1)
    assert all(job.created and not job._state.adding and job._state.db == "default" for job in jobs)
    assert {job.status for job in Job.objects.all()} == {JobStatus.READY}


def test_the_ids_come_from_the_tables_sequence() -> None:
    """Jobs enqueued one at a time (by the column's default) and by COPY never meet."""
    first = Job.objects.enqueue(noop)
    many = Job.objects.enqueue_many([Job.objects.build(noop) for _ in range(3)])
    last = Job.objects.enqueue(noop)
    ids = [first.pk, *(job.pk for job in many), last.pk]
    assert ids == sorted(ids)
    assert len(set(ids)) == 5
    assert sorted(Job.objects.values_list("pk", flat=True)) == ids


def test_ids_past_2_31_come_back_whole() -> None:
    table = connection.ops.quote_name(Job._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} ALTER COLUMN id RESTART WITH {2**31 + 10}")
    jobs = Job.objects.enqueue_many([Job.objects.build(noop) for _ in range(2)])
    assert [job.pk for job in jobs] == [2**31 + 10, 2**31 + 11]


def test_tagged_jobs_get_their_tags_by_the_ids_taken() -> None:
    jobs = Job.objects.enqueue_many([Job.objects.build(noop, [n], tags=[f"n:{n}"]) for n in range(3)])
    assert sorted(JobTag.objects.values_list("job_id", "tag")) == [(job.pk, f"n:{n}") for n, job in enumerate(jobs)]


def test_jobs_with_a_unique_key_are_not_copied() -> None:
    """COPY has no ON CONFLICT: keyed jobs go by INSERT, and a holder keeps its key."""
    holder = Job.objects.enqueue(noop, unique_key="k1")
    with CaptureQueriesContext(connection) as queries:
        jobs = Job.objects.enqueue_many([Job.objects.build(noop, unique_key=key) for key in ("k1", "k2")])
    assert any(query["sql"].startswith("INSERT") for query in queries)
    assert [(job.pk == holder.pk, job.created) for job in jobs] == [(True, False), (False, True)]


@pytest.mark.django_db(transaction=True)
def test_a_row_the_database_refuses_raises_djangos_error_and_writes_nothing(
    one_job_a_queue: None,  # noqa: F811 (the fixture)
) -> None:
    with pytest.raises(IntegrityError):
        Job.objects.enqueue_many([Job.objects.build(noop, queue=queue) for queue in ("a", "b", "a")])
    assert Job.objects.count() == 0
    # The connection is usable at once: the failed COPY ended with its transaction.
    assert len(Job.objects.enqueue_many([Job.objects.build(noop, queue=queue) for queue in ("a", "b")])) == 2


@pytest.mark.django_db(transaction=True)
def test_copied_jobs_are_rolled_back_with_the_callers_transaction() -> None:
    seen: list[int] = []
    with pytest.raises(Rollback):
        enqueue_then_roll_back(seen)
    assert seen == [3]
    assert Job.objects.count() == 0


class Rollback(Exception):
    pass


def enqueue_then_roll_back(seen: list[int]) -> None:
    with transaction.atomic():
        Job.objects.enqueue_many([Job.objects.build(noop) for _ in range(3)])
        seen.append(Job.objects.count())
        raise Rollback


@pytest.mark.parametrize(("use_tz", "time_zone", "server"), COMBINATIONS)
def test_copied_jobs_run_when_they_were_asked_to(use_tz: bool, time_zone: str, server: str | None) -> None:
    """The times ``COPY`` writes (the database's now, now plus a delay, a given time)
    read as the project's now under every ``USE_TZ``, ``TIME_ZONE`` and server time
    zone, as the ``INSERT``'s do (tests/unit/db/test_clock.py)."""
    minute, close = datetime.timedelta(minutes=1), datetime.timedelta(seconds=5)
    with zones(use_tz, time_zone, server):
        now = timezone.now()
        later, due, delayed = Job.objects.enqueue_many(
            [
                Job.objects.build(noop, run_at=now + minute),
                Job.objects.build(noop, run_at=now - datetime.timedelta(seconds=1)),
                Job.objects.build(noop, delay=minute),
            ]
        )
        assert abs(later.enqueued_at - now) < close
        assert [fields(job) for job in (later, due, delayed)] == [fields(job) for job in Job.objects.order_by("id")]
        assert list(Job.objects.ready().values_list("pk", flat=True)) == [due.pk]
        assert [job.pk for job in Job.objects.claim(worker_id="w")] == [due.pk]
