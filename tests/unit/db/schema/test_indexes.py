"""The indexes each database builds for the jobs table (``db/schema/indexes.py``): on
PostgreSQL the admin's indexes hold finished jobs only, and every query that read them
whole can still read them; the waiting jobs' index is read where they are counted and
filtered, and on MySQL/MariaDB holds a job only while it waits; there the admin's
indexes hold a finished job's status on a hidden column, written by its finish alone, and
what reads them names that column."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.db.models import Count, QuerySet
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.admin.throughput import LAST_HOUR, throughput
from django_sqlqueue.db import pruning, rollup
from django_sqlqueue.db.schema.indexes import (
    MYSQL_FINISHED_COLUMN,
    MYSQL_STATUS_COLUMNS,
    ActiveKeyConstraint,
    InStatus,
    finished_in,
)
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.reporting.counting import active_counts, status_counts
from django_sqlqueue.rules.lifecycle import FINISHED
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db

HOUR = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.timezone.utc)


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the admin's indexes are partial on PostgreSQL only")


def plan(rows: QuerySet[Any, Any]) -> str:
    """``rows``' plan, with the table's rows out of reach (a few test rows would be read
    whole rather than through an index)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        try:
            return rows.explain()
        finally:
            cursor.execute("SET LOCAL enable_seqscan = on")


@pytest.mark.usefixtures("postgresql")
@pytest.mark.parametrize(
    ("index", "rows"),
    [
        (  # the exact counts of the overview and sqlqueue_stats
            "sqlqueue_job_queue_status",
            lambda: Job.objects.filter(status__in=FINISHED).values_list("queue", "status").annotate(n=Count("*")),
        ),
        (  # the charts' hours, as rollup.tally filters them
            "sqlqueue_job_finished",
            lambda: (
                Job.objects.filter(finished_at__gte=HOUR, finished_at__lt=HOUR + rollup.HOUR, status__in=rollup.CHARTED)
                .values_list("queue")
                .annotate(n=Count("pk"))
            ),
        ),
        (  # the admin's "finished" range filter, which names no status
            "sqlqueue_job_finished",
            lambda: Job.objects.filter(finished_at__gte=HOUR, finished_at__lt=HOUR + rollup.HOUR),
        ),
        (  # pruning: its status or its finish time
            "sqlqueue_job_queue_status|sqlqueue_job_finished",
            lambda: pruning.due(Job.objects.get_queryset(), JobStatus.CANCELLED, datetime.timedelta(days=1), HOUR),
        ),
    ],
)
def test_what_read_the_admin_indexes_still_reads_them_on_postgresql(
    index: str, rows: Callable[[], QuerySet[Job]]
) -> None:
    read = plan(rows())
    assert any(name in read for name in index.split("|")), read


@pytest.mark.usefixtures("postgresql")
def test_the_admin_indexes_are_partial_but_the_enqueued_one_on_postgresql() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE '%%WHERE%%'",
            [Job._meta.db_table],
        )
        partial = {row[0] for row in cursor.fetchall()}
    assert {"sqlqueue_job_queue_status", "sqlqueue_job_finished"} <= partial
    assert "sqlqueue_job_enqueued" not in partial  # the enqueued filter reads jobs of every status


def hidden(job: Job, column: str) -> str | None:
    """MySQL/MariaDB: the job's value of the hidden column ``column``, as an index holds it."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote(column)} FROM {quote(Job._meta.db_table)} WHERE id = %s", [job.pk])
        value: str | None = cursor.fetchone()[0]
    return value


def waiting_queue(job: Job) -> str | None:
    """MySQL/MariaDB: the job's entry in the waiting index's hidden column."""
    return hidden(job, MYSQL_STATUS_COLUMNS[JobStatus.WAITING])


@pytest.mark.usefixtures("mysql_server")
def test_a_job_is_in_the_waiting_index_only_while_it_waits_on_mysql() -> None:
    parent = Job.objects.enqueue(noop, queue="first")
    child = Job.objects.enqueue(noop, queue="second", after=[parent])
    assert (waiting_queue(parent), waiting_queue(child)) == (None, "second")
    (claimed,) = Job.objects.claim(worker_id="w", queues=["first"])
    assert waiting_queue(claimed) is None  # RUNNING: a claim leaves the entry NULL
    Job.objects.finish(worker_id="w", succeeded={claimed: None})
    assert (waiting_queue(parent), waiting_queue(child)) == (None, None)  # the child is released


def test_in_status_finds_the_jobs_of_each_status() -> None:
    parent, other = Job.objects.enqueue(noop), Job.objects.enqueue(noop, queue="other")
    Job.objects.enqueue(noop, after=[parent])
    Job.objects.enqueue(noop, queue="other", after=[parent, other])
    Job.objects.cancel([Job.objects.enqueue(noop).pk])
    for status in JobStatus.values:
        by_lookup = sorted(Job.objects.filter(InStatus(status)).values_list("pk", flat=True))
        assert by_lookup == sorted(Job.objects.filter(status=status).values_list("pk", flat=True)), status
    assert active_counts(Job.objects.get_queryset(), {}) == {
        "default": {JobStatus.READY: 1, JobStatus.WAITING: 1},
        "other": {JobStatus.READY: 1, JobStatus.WAITING: 1},
    }


@pytest.mark.skipif(
    connection.vendor == "sqlite", reason="SQLite's planner, without statistics, reads a few rows' table instead"
)
def test_the_waiting_jobs_are_counted_and_filtered_from_their_index() -> None:
    Job.objects.enqueue(noop, after=[Job.objects.enqueue(noop)])
    listed = Job.objects.filter(InStatus(JobStatus.WAITING)).order_by("-id")[:50]
    counted = Job.objects.filter(InStatus(JobStatus.WAITING)).values_list("queue").annotate(n=Count("*")).order_by()
    for rows in (listed, counted):
        read = plan(rows) if connection.vendor == "postgresql" else rows.explain()
        assert "sqlqueue_job_waiting" in read, read


@pytest.mark.usefixtures("mysql_server")
def test_a_job_enters_the_finished_indexes_at_its_finish_only_on_mysql() -> None:
    retried, released, succeeded = (Job.objects.enqueue(noop, max_attempts=2) for _ in range(3))
    entries = {job: hidden(job, MYSQL_FINISHED_COLUMN) for job in (retried, released, succeeded)}
    assert entries == dict.fromkeys(entries)
    claimed = {job.pk: job for job in Job.objects.claim(worker_id="w")}
    Job.objects.finish(worker_id="w", failed={claimed[retried.pk]: ValueError("again")})
    Job.objects.release(worker_id="w", unstarted=[claimed[released.pk]])
    assert dict(Job.objects.values_list("pk", "status")) == {
        retried.pk: JobStatus.READY,
        released.pk: JobStatus.READY,
        succeeded.pk: JobStatus.RUNNING,
    }
    # A claim, a retry and a release leave each entry as enqueue wrote it: (queue, NULL), (NULL, NULL).
    assert [hidden(job, MYSQL_FINISHED_COLUMN) for job in (retried, released, succeeded)] == [None, None, None]
    Job.objects.finish(worker_id="w", succeeded={claimed[succeeded.pk]: None})
    Job.objects.cancel([released.pk])
    assert [hidden(job, MYSQL_FINISHED_COLUMN) for job in (retried, released, succeeded)] == [
        None,
        JobStatus.CANCELLED,
        JobStatus.SUCCESSFUL,
    ]


def test_finished_in_finds_the_finished_jobs_and_their_counts_on_every_database() -> None:
    succeeded, failed, ready = (Job.objects.enqueue(noop, queue=queue, max_attempts=1) for queue in ("a", "b", "a"))
    Job.objects.cancel([Job.objects.enqueue(noop, queue="b").pk])
    claimed = {job.pk: job for job in Job.objects.claim(worker_id="w", limit=2)}
    Job.objects.finish(worker_id="w", succeeded={claimed[succeeded.pk]: None}, failed={claimed[failed.pk]: KeyError()})
    for statuses in [*([status] for status in FINISHED), FINISHED, rollup.CHARTED]:
        by_lookup = sorted(Job.objects.filter(finished_in(*statuses)).values_list("pk", flat=True))
        assert by_lookup == sorted(Job.objects.filter(status__in=statuses).values_list("pk", flat=True)), statuses
    assert status_counts(Job.objects.get_queryset()) == {
        "a": {JobStatus.SUCCESSFUL: 1, JobStatus.READY: 1},
        "b": {JobStatus.FAILED: 1, JobStatus.CANCELLED: 1},
    }
    finished_at = Job.objects.get(pk=succeeded.pk).finished_at  # the failure's too: one statement
    assert finished_at is not None
    hour = rollup.floor_hour(finished_at)
    assert sorted(rollup.tally(Job.objects.get_queryset(), hour)) == [("a", 1, 0), ("b", 0, 1)]
    assert ready.pk not in Job.objects.filter(finished_in(*FINISHED)).values_list("pk", flat=True)


def explained(sql: str) -> str:
    """MySQL/MariaDB: the plan of a statement as it ran, every column of each row."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        return str(cursor.fetchall())


@pytest.mark.usefixtures("mysql_server")
@pytest.mark.parametrize(
    ("index", "read"),
    [
        ("sqlqueue_job_queue_status", lambda: status_counts(Job.objects.get_queryset())),
        ("sqlqueue_job_finished", lambda: rollup.tally(Job.objects.get_queryset(), HOUR)),
        ("sqlqueue_job_finished", lambda: rollup.catch_up(connection.alias, batches=1)),
        ("sqlqueue_job_finished", lambda: throughput(Job.objects.get_queryset(), LAST_HOUR)),
        (
            "sqlqueue_job_finished",
            lambda: list(pruning.due(Job.objects.get_queryset(), JobStatus.FAILED, datetime.timedelta(0), HOUR)[:10]),
        ),
        (  # the admin's status filter with its finished range
            "sqlqueue_job_finished",
            lambda: list(
                Job.objects.filter(
                    InStatus(JobStatus.CANCELLED), finished_at__gte=HOUR, finished_at__lt=HOUR + rollup.HOUR
                )
                .order_by("-finished_at", "-pk")
                .values_list("pk")[:50]
            ),
        ),
        (
            "sqlqueue_job_finished",
            lambda: pruning.count(Job.objects.get_queryset(), {JobStatus.CANCELLED: datetime.timedelta(0)}),
        ),
    ],
)
def test_what_reads_the_finished_indexes_reads_them_through_their_hidden_column_on_mysql(
    index: str, read: Callable[[], object]
) -> None:
    for queue in ("a", "b"):
        Job.objects.cancel([Job.objects.enqueue(noop, queue=queue).pk])
    with CaptureQueriesContext(connection) as queries:
        read()
    hidden_reads = [query["sql"] for query in queries if MYSQL_FINISHED_COLUMN in query["sql"]]
    assert hidden_reads
    for sql in hidden_reads:
        assert index in explained(sql), sql


@pytest.mark.usefixtures("mysql_server")  # PostgreSQL locks, so reads, each row; SQLite's index lacks status
@pytest.mark.parametrize("queues", [None, ["default"]])
def test_the_claims_candidates_are_read_from_the_index_alone_on_mysql(queues: list[str] | None) -> None:
    Job.objects.enqueue(noop, expires_in=60)
    Job.objects.enqueue(noop)
    candidates = Job.objects.ready().in_queues(queues).in_claim_order().values("pk")[:100]
    read = candidates.explain()
    assert re.search(r"Using index(?! condition)", read), read  # index only: no row read
    assert "sqlqueue_job_ready" in read, read


def test_a_keyless_job_stops_at_the_unique_keys_test() -> None:
    """SQLite evaluates a partial index's condition on every UPDATE of a column it names:
    testing the key first spares a keyless job the ``status IN (…)`` of three values,
    which SQLite evaluates with a temporary table for each row."""
    if not connection.features.supports_partial_indexes:
        pytest.skip("MySQL/MariaDB's stand-in is a hidden column's unique index")
    editor = connection.schema_editor()  # only to word the statement: not entered
    statement = str(ActiveKeyConstraint(name="sqlqueue_job_unique_key", kept=True).create_sql(Job, editor))
    assert 'WHERE ("unique_key" IS NOT NULL AND ' in statement
    assert "'WAITING'" in statement
