"""``Job.objects.enqueue_rows()``: plain ``(task, args, kwargs)`` rows written without a
``Job`` object each (``managers/enqueueing.py``, and ``row_values``/``insert_rows`` in
``db/inserting.py``): the same rows as ``enqueue_many`` writes, all or none."""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.db import inserting
from django_sqlqueue.exceptions import InvalidJobError, UnknownTaskError
from django_sqlqueue.models import Job, JobStatus
from tests.support.hostile import HOLDS_NUL
from tests.testapp.tasks import noop, one_at_a_time, per_tenant, report, send_welcome, sync_order
from tests.unit.db.test_inserting import one_job_a_queue  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

#: The columns a new job is written with (not its id, and not the times the database sets).
WRITTEN = [field.attname for field in Job._meta.concrete_fields if field.attname not in ("id", "run_at", "enqueued_at")]

ROWS: list[tuple[Any, Any, Any]] = [
    (noop, [1], None),
    (report, ("monthly",), {}),
    ("tests.testapp.tasks.send_welcome", [7], {"greeting": "Hi"}),
    (per_tenant, [], {"tenant": "acme"}),
    (one_at_a_time, (), None),
    (noop, [], {"nested": {"a": [1, 2.5, None, True]}}),
]


def stored() -> list[tuple[Any, ...]]:
    return list(Job.objects.order_by("id").values_list(*WRITTEN))


def test_the_rows_are_those_enqueue_many_writes_in_their_order() -> None:
    Job.objects.enqueue_many([Job.objects.build(task, args, kwargs) for task, args, kwargs in ROWS])
    expected = stored()
    Job.objects.all().delete()
    assert Job.objects.enqueue_rows(iter(ROWS)) == len(ROWS)
    assert stored() == expected
    jobs = list(Job.objects.order_by("id"))
    assert [(job.status, job.concurrency_key) for job in jobs[3:5]] == [
        (JobStatus.READY, 'tests.testapp.tasks.per_tenant:{"tenant":"acme"}'),
        (JobStatus.READY, "tests.testapp.tasks.one_at_a_time"),
    ]
    assert {(job.run_at, job.enqueued_at) for job in jobs} == {(jobs[0].enqueued_at,) * 2}


def test_options_apply_to_every_row_over_each_tasks_own() -> None:
    Job.objects.enqueue_rows([(noop, [1], None), (send_welcome, [2], None)], queue="bulk", priority=3, max_attempts=9)
    Job.objects.enqueue_rows([(noop, [3], None)], timeout=datetime.timedelta(seconds=90))
    assert list(Job.objects.order_by("id").values_list("queue", "priority", "max_attempts", "timeout")) == [
        ("bulk", 3, 9, None),
        ("bulk", 3, 9, 30.0),
        ("default", 0, 3, 90.0),
    ]


@pytest.mark.parametrize("how", ["delay", "run_at"])
def test_every_row_is_due_at_the_given_time(how: str) -> None:
    when = datetime.datetime(2031, 1, 1, tzinfo=datetime.timezone.utc)
    option: dict[str, Any] = {"delay": 600} if how == "delay" else {"run_at": when}
    Job.objects.enqueue_rows([(noop, [n], None) for n in range(3)], **option)
    jobs = list(Job.objects.order_by("id"))
    for job in jobs:
        due = job.enqueued_at + datetime.timedelta(seconds=600) if how == "delay" else when
        assert abs(job.run_at - due) < datetime.timedelta(seconds=5)
    assert not Job.objects.ready().exists()


def test_no_rows_write_nothing() -> None:
    with CaptureQueriesContext(connection) as queries:
        assert Job.objects.enqueue_rows([]) == 0
    assert Job.objects.count() == 0
    assert not [query for query in queries if "INSERT" in query["sql"]]


def test_rows_go_in_statements_of_batch_size_rows() -> None:
    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL takes the rows in one COPY")
    with CaptureQueriesContext(connection) as queries:
        Job.objects.enqueue_rows(((noop, [n], None) for n in range(250)), batch_size=100)
    # Chunks of 100, 100 and 50 rows, each in one INSERT unless the database takes fewer
    # parameters a statement (SQLite before Django 6.0: 999, 12 a row).
    most = connection.features.max_query_params
    per_statement = 100 if most is None else min(100, most // (len(inserting._BOUND) + len(inserting._TIMED)))
    inserts = [query for query in queries if query["sql"].startswith("INSERT")]
    assert len(inserts) == sum(math.ceil(chunk / per_statement) for chunk in (100, 100, 50))
    assert sorted(args[0] for args in Job.objects.values_list("args", flat=True)) == list(range(250))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (
            (noop, ["a\x00b"], None),
            InvalidJobError,
            f"Cannot enqueue tests.testapp.tasks.noop (row 3): args[0] {HOLDS_NUL}.",
        ),
        ((noop, "abc", None), InvalidJobError, "(row 3): args must be a list or tuple, not str."),
        ((noop, [], [1]), InvalidJobError, "(row 3): kwargs must be a dict, not list."),
        ((noop, []), InvalidJobError, "Row 3 is not (task, args, kwargs): (<"),
        (None, InvalidJobError, "Row 3 is not (task, args, kwargs): None."),
        (("no.such.task", [], None), UnknownTaskError, "no.such.task"),
        (({"a": 1}, [], None), UnknownTaskError, "{'a': 1} is not a registered task"),
        ((per_tenant, [], {}), InvalidJobError, "tenant"),
        ((sync_order, [1], None), InvalidJobError, "has @job(unique=...): enqueue_rows cannot say"),
        (
            (send_welcome, [], {"greting": "Hi"}),
            InvalidJobError,
            "Cannot enqueue tests.testapp.tasks.send_welcome (row 3): its arguments do not fit "
            "send_welcome(user_id, *, greeting='Hello'): missing a required argument: 'user_id', "
            "and got an unexpected keyword argument 'greting'.",
        ),
    ],
)
def test_a_bad_row_anywhere_writes_nothing(bad: Any, error: type[Exception], message: str) -> None:
    """Rows are checked as they stream, after earlier statements were written: the
    transaction takes them back."""
    rows = [(noop, [n], None) for n in range(3)] + [bad] + [(noop, [9], None)]
    with pytest.raises(error) as excinfo:
        Job.objects.enqueue_rows(rows, batch_size=1)
    assert message in str(excinfo.value)
    assert Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_row_the_database_refuses_writes_nothing_and_raises_djangos_error(
    one_job_a_queue: None,  # noqa: F811 (the fixture)
) -> None:
    Job.objects.enqueue_rows([(noop, [], None)], queue="first")
    with pytest.raises(IntegrityError):
        Job.objects.enqueue_rows([(noop, [1], None), (noop, [2], None)], queue="second")
    assert list(Job.objects.values_list("queue", flat=True)) == ["first"]


@pytest.mark.django_db(transaction=True)
def test_in_the_callers_transaction_a_bad_row_takes_back_only_the_rows() -> None:
    """A savepoint: the caller's own work stands, and it may commit."""
    with transaction.atomic():
        Job.objects.enqueue(noop, ["mine"])
        with pytest.raises(InvalidJobError):
            Job.objects.enqueue_rows([(noop, [1], None), (noop, ["a\x00"], None)], batch_size=1)
    assert list(Job.objects.values_list("args", flat=True)) == [["mine"]]


@pytest.mark.django_db(transaction=True)
def test_rows_are_rolled_back_with_the_callers_transaction() -> None:
    with pytest.raises(Rollback):
        enqueue_rows_then_roll_back()
    assert Job.objects.count() == 0


class Rollback(Exception):
    pass


def enqueue_rows_then_roll_back() -> None:
    with transaction.atomic():
        Job.objects.enqueue_rows([(noop, [1], None)] * 3)
        raise Rollback


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, True, "10"])
def test_batch_size_must_be_a_positive_integer(batch_size: Any) -> None:
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        Job.objects.enqueue_rows([(noop, [], None)], batch_size=batch_size)


def test_a_plain_row_holds_a_built_jobs_values_in_the_inserts_order() -> None:
    job = Job.objects.build(per_tenant, [], {"tenant": "acme"}, timeout=4)
    row = inserting.row_values(job, job.args, job.kwargs, job.concurrency_key, job.concurrency_limit)
    assert row == tuple(inserting._bound(job))


def test_rows_are_read_as_they_are_written_not_all_first() -> None:
    """A generator of rows is consumed as the statements go, so hundreds of thousands of
    rows are never all held at once."""
    written_before: list[int] = []

    def rows() -> Iterator[tuple[Any, Any, Any]]:
        for n in range(30):
            if n == 25:
                with connection.cursor() as cursor:  # the same connection, inside the write
                    cursor.execute(f"SELECT COUNT(*) FROM {Job._meta.db_table}")
                    written_before.append(cursor.fetchone()[0])
            yield noop, [n], None

    if connection.vendor == "postgresql":
        pytest.skip("a query cannot run on PostgreSQL's connection while its COPY is in progress")
    Job.objects.enqueue_rows(rows(), batch_size=10)
    assert written_before == [20]
