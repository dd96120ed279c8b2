"""``Job.objects.enqueue()``, ``build()`` and ``enqueue_many()`` (``managers.py``) and the
INSERT of ``db/inserting.py``: defaults, validation, and the caller's transaction."""

from __future__ import annotations

import datetime
import math
import zoneinfo
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.exceptions import InvalidJobError, UnknownTaskError
from django_sqlqueue.models import Job, JobStatus
from tests.testapp.tasks import noop, report

pytestmark = pytest.mark.django_db

NOT_JSON = "which is not JSON: pass only None, bool, int, float, str, list and dict"
PARIS = zoneinfo.ZoneInfo("Europe/Paris")


def not_a_task() -> None:
    """Never decorated with @job."""


class Rollback(Exception):
    pass


def enqueue_then_roll_back(args: list[str]) -> None:
    with transaction.atomic():
        Job.objects.enqueue(noop, args)
        raise Rollback


@pytest.fixture
def other_connection() -> Iterator[Any]:
    """A second connection to the test database, as a worker would have."""
    other = connections.create_connection("default")
    try:
        yield other
    finally:
        other.close()


def count_from(other: Any) -> int:
    with other.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {other.ops.quote_name(Job._meta.db_table)}")
        return int(cursor.fetchone()[0])


# Enqueue


def test_enqueue_returns_the_saved_job() -> None:
    job = Job.objects.enqueue(noop, [1, "two"], {"three": [3.0, None]})
    assert job.pk is not None
    stored = Job.objects.get()
    assert stored.pk == job.pk
    assert (stored.task, stored.args, stored.kwargs) == ("tests.testapp.tasks.noop", [1, "two"], {"three": [3.0, None]})
    assert (stored.status, stored.attempts, stored.worker, stored.errors, stored.result) == (
        JobStatus.READY,
        0,
        "",
        [],
        None,
    )
    assert (stored.started_at, stored.finished_at) == (None, None)


def test_settings_defaults() -> None:
    job = Job.objects.enqueue(noop)
    job.refresh_from_db()
    assert (job.queue, job.priority, job.max_attempts, job.timeout) == ("default", 0, 3, None)
    assert (job.args, job.kwargs) == ([], {})


def test_changed_settings_defaults(settings: Any) -> None:
    settings.SQLQUEUE_DEFAULT_QUEUE = "mail"
    settings.SQLQUEUE_MAX_ATTEMPTS = 5
    settings.SQLQUEUE_TIMEOUT = 30
    job = Job.objects.enqueue(noop)
    job.refresh_from_db()
    assert (job.queue, job.priority, job.max_attempts, job.timeout) == ("mail", 0, 5, 30.0)


def test_decorator_defaults_come_before_settings(settings: Any) -> None:
    settings.SQLQUEUE_DEFAULT_QUEUE = "mail"
    settings.SQLQUEUE_MAX_ATTEMPTS = 5
    settings.SQLQUEUE_TIMEOUT = 30
    job = Job.objects.enqueue(report, ["monthly"])
    job.refresh_from_db()
    assert (job.task, job.queue, job.priority, job.max_attempts, job.timeout) == (
        "tests.testapp.tasks.report",
        "reports",
        10,
        2,
        5.0,
    )


def test_call_options_come_first() -> None:
    job = Job.objects.enqueue(
        report, ["monthly"], queue="urgent", priority=-3, max_attempts=1, timeout=datetime.timedelta(minutes=2)
    )
    job.refresh_from_db()
    assert (job.queue, job.priority, job.max_attempts, job.timeout) == ("urgent", -3, 1, 120.0)


def test_enqueue_by_name() -> None:
    job = Job.objects.enqueue("tests.testapp.tasks.report", ("monthly",))
    job.refresh_from_db()
    assert (job.task, job.queue, job.args) == ("tests.testapp.tasks.report", "reports", ["monthly"])


def test_run_at_and_enqueued_at_come_from_the_database() -> None:
    job = Job.objects.enqueue(noop)
    run_at, enqueued_at = job.run_at, job.enqueued_at
    assert isinstance(run_at, datetime.datetime)
    assert run_at.tzinfo is not None
    assert run_at == enqueued_at
    job.refresh_from_db()
    assert (job.run_at, job.enqueued_at) == (run_at, enqueued_at)


@pytest.mark.parametrize("delay", [90, 90.0, datetime.timedelta(seconds=90)])
def test_delay(delay: Any) -> None:
    job = Job.objects.enqueue(noop, delay=delay)
    job.refresh_from_db()
    # One INSERT: both columns read the same database clock.
    assert job.run_at - job.enqueued_at == datetime.timedelta(seconds=90)


def test_zero_delay_is_now() -> None:
    job = Job.objects.enqueue(noop, delay=0)
    job.refresh_from_db()
    assert job.run_at == job.enqueued_at


def test_run_at() -> None:
    when = datetime.datetime(2031, 7, 14, 9, 30, 15, 123456, tzinfo=PARIS)
    job = Job.objects.enqueue(noop, run_at=when)
    assert job.run_at == when
    job.refresh_from_db()
    assert job.run_at == when
    assert job.run_at - job.enqueued_at > datetime.timedelta(days=365)


def test_run_at_in_the_past_is_ready_now() -> None:
    job = Job.objects.enqueue(noop, run_at=datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc))
    assert list(Job.objects.ready()) == [job]


def test_delayed_job_is_not_ready() -> None:
    Job.objects.enqueue(noop, delay=3600)
    assert list(Job.objects.ready()) == []


# Refusals: the right exception, the exact reason, and nothing written.


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (
            not_a_task,
            "tests.unit.db.test_inserting.not_a_task is not a registered task: decorate it with @django_sqlqueue.job.",
        ),
        (
            "tests.testapp.tasks.missing",
            "No task is registered as 'tests.testapp.tasks.missing'. Tasks are registered by @django_sqlqueue.job, "
            "or by Django's @task with the SQLQueueBackend, in a module that is imported: "
            "an installed app's tasks.py is imported for you.",
        ),
    ],
)
def test_unknown_task_is_refused(task: Any, message: str) -> None:
    with pytest.raises(UnknownTaskError) as excinfo:
        Job.objects.enqueue(task)
    assert str(excinfo.value) == message
    assert Job.objects.count() == 0


@pytest.mark.parametrize(
    ("args", "kwargs", "problem"),
    [
        (
            (),
            {"when": datetime.datetime(2030, 1, 1, tzinfo=PARIS)},
            f"kwargs['when'] is a datetime.datetime, {NOT_JSON}",
        ),
        ((b"raw",), {}, f"args[0] is a bytes, {NOT_JSON}"),
        ((1, object()), {}, f"args[1] is a object, {NOT_JSON}"),
        ((float("nan"),), {}, "args[0] is nan, which JSON cannot represent"),
        ((), {"ids": {1, 2}}, f"kwargs['ids'] is a set, {NOT_JSON}"),
        ((), {"by_id": {1: "a"}}, "kwargs['by_id'] has the key 1: JSON object keys must be strings"),
        ("abc", {}, "args must be a list or tuple, not str"),
    ],
    ids=["datetime", "bytes", "object", "nan", "set", "int-key", "str-args"],
)
def test_arguments_that_are_not_json_are_refused(args: Any, kwargs: Any, problem: str) -> None:
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue(noop, args, kwargs)
    assert str(excinfo.value) == f"Cannot enqueue tests.testapp.tasks.noop: {problem}."
    assert Job.objects.count() == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"run_at": datetime.datetime(2030, 1, 1, 12)},
            "run_at 2030-01-01T12:00:00 is naive but USE_TZ is on: say which time zone it is in, "
            "e.g. with django.utils.timezone.make_aware().",
        ),
        ({"run_at": datetime.date(2030, 1, 1)}, "run_at must be a datetime, not date."),
        (
            {"run_at": datetime.datetime(2030, 1, 1, tzinfo=PARIS), "delay": 5},
            "Pass run_at or delay, not both.",
        ),
        ({"delay": -1}, "delay must be a timedelta or a number of seconds of at least 0, not -1."),
        (
            {"delay": datetime.timedelta(seconds=-1)},
            "delay must be a timedelta or a number of seconds of at least 0, not datetime.timedelta(days=-1, "
            "seconds=86399).",
        ),
        ({"delay": "10"}, "delay must be a timedelta or a number of seconds of at least 0, not '10'."),
        ({"delay": True}, "delay must be a timedelta or a number of seconds of at least 0, not True."),
        ({"delay": float("nan")}, "delay must be a timedelta or a number of seconds of at least 0, not nan."),
        ({"delay": float("inf")}, "delay must be a timedelta or a number of seconds of at least 0, not inf."),
        (
            {"priority": 101},
            "Cannot enqueue tests.testapp.tasks.noop: priority must be an integer from -100 to 100, not 101.",
        ),
        (
            {"priority": -101},
            "Cannot enqueue tests.testapp.tasks.noop: priority must be an integer from -100 to 100, not -101.",
        ),
        (
            {"priority": 1.5},
            "Cannot enqueue tests.testapp.tasks.noop: priority must be an integer from -100 to 100, not 1.5.",
        ),
        (
            {"max_attempts": 0},
            "Cannot enqueue tests.testapp.tasks.noop: max_attempts must be an integer of at least 1, not 0.",
        ),
        (
            {"timeout": 0},
            "Cannot enqueue tests.testapp.tasks.noop: timeout must be a positive number of seconds or None, not 0.",
        ),
        ({"queue": ""}, "Cannot enqueue tests.testapp.tasks.noop: a queue name must be a non-empty string, not ''."),
    ],
    ids=[
        "naive-run_at",
        "date-run_at",
        "run_at-and-delay",
        "negative-delay",
        "negative-timedelta",
        "str-delay",
        "bool-delay",
        "nan-delay",
        "infinite-delay",
        "priority-101",
        "priority--101",
        "priority-1.5",
        "max_attempts-0",
        "timeout-0",
        "empty-queue",
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue(noop, **options)
    assert str(excinfo.value) == message
    assert Job.objects.count() == 0


def test_aware_run_at_is_refused_without_use_tz(settings: Any) -> None:
    settings.USE_TZ = False
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue(noop, run_at=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc))
    assert str(excinfo.value) == (
        "run_at 2030-01-01T00:00:00+00:00 has a time zone but USE_TZ is off: pass a naive local time."
    )
    assert Job.objects.count() == 0


def test_queue_outside_sqlqueue_queues_is_refused(settings: Any) -> None:
    settings.SQLQUEUE_QUEUES = ["default", "mail"]
    Job.objects.enqueue(noop, queue="mail")
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue(noop, queue="reports")
    assert str(excinfo.value) == (
        "Cannot enqueue tests.testapp.tasks.noop: queue 'reports' is not one of SQLQUEUE_QUEUES ['default', 'mail']."
    )
    with pytest.raises(InvalidJobError):
        Job.objects.enqueue(report, ["monthly"])  # its @job names the queue 'reports'
    assert list(Job.objects.values_list("queue", flat=True)) == ["mail"]


# Transactions: enqueue joins the caller's.


@pytest.mark.django_db(transaction=True)
def test_rolled_back_transaction_leaves_no_job() -> None:
    with pytest.raises(Rollback):
        enqueue_then_roll_back(["rolled back"])
    assert Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_savepoint_rollback_removes_only_its_job() -> None:
    with transaction.atomic():
        outer = Job.objects.enqueue(noop, ["outer"])
        with pytest.raises(Rollback):
            enqueue_then_roll_back(["inner"])
    assert list(Job.objects.values_list("pk", "args")) == [(outer.pk, ["outer"])]


@pytest.mark.django_db(transaction=True)
def test_job_is_invisible_to_others_until_commit(other_connection: Any) -> None:
    with transaction.atomic():
        Job.objects.enqueue(noop)
        assert Job.objects.count() == 1
        assert count_from(other_connection) == 0
    assert count_from(other_connection) == 1


# enqueue_many


def test_enqueue_many_writes_built_jobs() -> None:
    when = datetime.datetime(2031, 1, 1, tzinfo=datetime.timezone.utc)
    jobs = Job.objects.enqueue_many(
        [
            Job.objects.build(noop, [1]),
            Job.objects.build(report, ["monthly"], priority=1),
            Job.objects.build("tests.testapp.tasks.noop", kwargs={"a": 1}, delay=60),
            Job.objects.build(noop, run_at=when),
        ]
    )
    assert Job.objects.count() == 4
    stored = list(Job.objects.order_by("id"))
    if connection.features.can_return_rows_from_bulk_insert:
        assert [job.pk for job in jobs] == [job.pk for job in stored]
    assert [(job.task, job.queue, job.priority, job.max_attempts, job.args, job.kwargs) for job in stored] == [
        ("tests.testapp.tasks.noop", "default", 0, 3, [1], {}),
        ("tests.testapp.tasks.report", "reports", 1, 2, ["monthly"], {}),
        ("tests.testapp.tasks.noop", "default", 0, 3, [], {"a": 1}),
        ("tests.testapp.tasks.noop", "default", 0, 3, [], {}),
    ]
    now = stored[0].enqueued_at
    assert [job.enqueued_at for job in stored] == [now] * 4
    assert [job.run_at for job in stored] == [now, now, now + datetime.timedelta(seconds=60), when]


def test_enqueue_many_returns_ids_and_database_times() -> None:
    if not connection.features.can_return_rows_from_bulk_insert:
        pytest.skip(f"{connection.display_name} returns no ids from a multi-row INSERT")
    jobs = Job.objects.enqueue_many([Job.objects.build(noop, [n]) for n in range(3)])
    assert sorted(job.pk for job in jobs) == sorted(Job.objects.values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as queries:
        assert {job.pk: job.args for job in jobs} == dict(Job.objects.values_list("pk", "args"))
        assert [job.run_at for job in jobs] == list(Job.objects.order_by("pk").values_list("run_at", flat=True))
    assert len(queries) == 2  # the jobs' run_at came back with the INSERT


def test_enqueue_many_uses_few_statements() -> None:
    jobs = [Job.objects.build(noop, [n]) for n in range(2500)]
    with CaptureQueriesContext(connection) as queries:
        Job.objects.enqueue_many(jobs, batch_size=1000)
    inserts = [query["sql"] for query in queries if query["sql"].lstrip().upper().startswith("INSERT")]
    # 1,000 + 1,000 + 500 rows, unless the database takes fewer parameters a statement
    # (SQLite before Django 6.0: 999, and a row binds at most 8 values).
    rows_per_insert = min(1000, (connection.features.max_query_params or 8000) // 8)
    assert len(inserts) == math.ceil(2500 / rows_per_insert)
    assert len(inserts) == 3 or connection.vendor == "sqlite"
    assert Job.objects.count() == 2500
    assert sorted(args[0] for args in Job.objects.values_list("args", flat=True)) == list(range(2500))


def test_enqueue_many_of_nothing() -> None:
    assert Job.objects.enqueue_many([]) == []
    assert Job.objects.count() == 0


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (
            lambda: Job.objects.build(noop, [datetime.date(2030, 1, 1)]),
            InvalidJobError,
            f"Cannot enqueue tests.testapp.tasks.noop: args[0] is a datetime.date, {NOT_JSON}.",
        ),
        (
            lambda: Job.objects.build(noop, priority=500),
            InvalidJobError,
            "Cannot enqueue tests.testapp.tasks.noop: priority must be an integer from -100 to 100, not 500.",
        ),
        (
            lambda: Job(task="tests.testapp.tasks.noop", queue="default"),
            InvalidJobError,
            "Cannot enqueue tests.testapp.tasks.noop: max_attempts not set: make jobs with Job.objects.build().",
        ),
        (
            lambda: Job(task="tests.testapp.tasks.missing", queue="default", max_attempts=1),
            UnknownTaskError,
            "No task is registered as 'tests.testapp.tasks.missing'. Tasks are registered by @django_sqlqueue.job, "
            "or by Django's @task with the SQLQueueBackend, in a module that is imported: "
            "an installed app's tasks.py is imported for you.",
        ),
    ],
    ids=["not-json", "priority", "not-built", "unknown-task"],
)
def test_one_bad_job_refuses_them_all(bad: Any, error: type[Exception], message: str) -> None:
    jobs = [Job.objects.build(noop, [n]) for n in range(10)]
    jobs.insert(5, bad())
    with pytest.raises(error) as excinfo:
        Job.objects.enqueue_many(jobs, batch_size=3)
    assert str(excinfo.value) == message
    assert Job.objects.count() == 0


# Ids beyond a 32-bit integer


def test_job_id_above_2_31_runs_to_the_end() -> None:
    next_id = 2**31 + 10
    table = connection.ops.quote_name(Job._meta.db_table)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table} ALTER COLUMN id RESTART WITH {next_id}")
    else:
        # SQLite and MySQL/MariaDB continue after the largest id written.
        placeholder = Job.objects.build(noop)
        placeholder.pk = next_id - 1
        placeholder.status = JobStatus.CANCELLED
        placeholder.save(force_insert=True)

    job = Job.objects.enqueue(noop, [2**40])
    assert job.pk == next_id
    claimed = Job.objects.claim(worker_id="w")
    assert [claimed_job.pk for claimed_job in claimed] == [next_id]
    assert Job.objects.finish(worker_id="w", succeeded={claimed[0]: {"big": 2**40}}) == 1
    job.refresh_from_db()
    assert (job.status, job.attempts, job.result) == (JobStatus.SUCCESSFUL, 1, {"big": 2**40})
