"""``Job.objects.enqueue()``, ``build()`` and ``enqueue_many()`` (``managers/enqueueing.py``, which
builds and checks each job with ``db/building.py``) and the INSERT of
``db/inserting.py``: defaults, validation, and the caller's transaction."""

from __future__ import annotations

import datetime
import json
import math
import re
import zoneinfo
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connection, connections, transaction
from django.db.models import Index
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_sqlqueue import checks
from django_sqlqueue.db import engines, inserting
from django_sqlqueue.exceptions import InvalidJobError, TablesNotMigrated, UnknownTaskError
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.validation import MAX_DELAY
from tests.support.hostile import HOLDS_NUL, HOLDS_SURROGATE, PAST_64_BITS, TOO_DEEP, holding_itself, nested
from tests.support.middleware import NOTED
from tests.support.spies import counting
from tests.testapp.tasks import add, noop, report, send_welcome

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
        ((1, object()), {}, f"args[1] is an object, {NOT_JSON}"),
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


WELCOME = "tests.testapp.tasks.send_welcome: its arguments do not fit send_welcome(user_id, *, greeting='Hello')"


@pytest.mark.parametrize(
    ("args", "kwargs", "problem"),
    [
        ((), {}, "missing a required argument: 'user_id'"),
        ((1,), {"greting": "Hi"}, "got an unexpected keyword argument 'greting'"),
        ((1, "Hi"), {}, "2 positional arguments given, but it takes 1 (user_id)"),
        ((1,), {"user_id": 2}, "multiple values for argument 'user_id'"),
        (
            (),
            {"user": 1},
            "missing a required argument: 'user_id', and got an unexpected keyword argument 'user'",
        ),
        ((1,), {"greting": "Hi", "lang": "fr"}, "got unexpected keyword arguments 'greting', 'lang'"),
    ],
    ids=["missing", "unexpected", "too-many", "twice", "missing-and-unexpected", "two-unexpected"],
)
def test_arguments_the_task_cannot_take_are_refused(args: Any, kwargs: Any, problem: str) -> None:
    """Refused at enqueue, naming the argument, rather than failed by every attempt with TypeError."""
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue(send_welcome, args, kwargs)
    assert str(excinfo.value) == f"Cannot enqueue {WELCOME}: {problem}."
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue_many([Job.objects.build(send_welcome, [1]), Job.objects.build(send_welcome, args, kwargs)])
    assert str(excinfo.value) == f"Cannot enqueue {WELCOME}: {problem}."
    assert Job.objects.count() == 0
    Job.objects.enqueue(send_welcome, [1], {"greeting": "Hi"})
    Job.objects.enqueue(send_welcome, [], {"user_id": 1})
    assert Job.objects.count() == 2


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
        ({"delay": -1}, "delay must be a timedelta or a number of seconds from 0 to 365000 days, not -1."),
        (
            {"delay": datetime.timedelta(seconds=-1)},
            "delay must be a timedelta or a number of seconds from 0 to 365000 days, not datetime.timedelta(days=-1, "
            "seconds=86399).",
        ),
        ({"delay": "10"}, "delay must be a timedelta or a number of seconds from 0 to 365000 days, not '10'."),
        ({"delay": True}, "delay must be a timedelta or a number of seconds from 0 to 365000 days, not True."),
        ({"delay": float("nan")}, "delay must be a timedelta or a number of seconds from 0 to 365000 days, not nan."),
        ({"delay": float("inf")}, "delay must be a timedelta or a number of seconds from 0 to 365000 days, not inf."),
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
            "Cannot enqueue tests.testapp.tasks.noop: max_attempts must be an integer from 1 to 2147483647, not 0.",
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


def test_enqueue_many_reads_the_clock_once_and_gets_back_only_the_ids() -> None:
    """Every time is a value once the database's now is read (COPY's way on PostgreSQL):
    the jobs come back as the table holds them, with nothing loaded anew."""
    when = datetime.datetime(2031, 1, 1, tzinfo=datetime.timezone.utc)
    built = [
        Job.objects.build(noop, [1]),
        Job.objects.build(noop, delay=60),
        Job.objects.build(noop, run_at=when, expires_at=when + datetime.timedelta(days=1)),
        Job.objects.build(noop, expires_in=3600),
    ]
    with CaptureQueriesContext(connection) as queries:
        jobs = Job.objects.enqueue_many(built)
    if connection.vendor != "postgresql":
        assert [query["sql"].split()[0] for query in queries] == ["SELECT", "INSERT"]
        assert queries[1]["sql"].partition(" RETURNING ")[2] in ("", connection.ops.quote_name("id"))
    names: tuple[str, ...] = ("run_at", "enqueued_at", "expires_at", "status", "args")
    if connection.features.can_return_rows_from_bulk_insert:
        names = ("id", *names)
    with CaptureQueriesContext(connection) as reads:
        assert [[getattr(job, name) for name in names] for job in jobs] == [
            [getattr(job, name) for name in names] for job in Job.objects.order_by("id")
        ]
    assert len(reads) == 1
    now = jobs[0].enqueued_at
    assert [job.run_at for job in jobs] == [now, now + datetime.timedelta(seconds=60), when, now]
    assert [job.expires_at for job in jobs] == [
        None,
        None,
        when + datetime.timedelta(days=1),
        now + datetime.timedelta(hours=1),
    ]
    assert all(job.created and not job._state.adding for job in jobs)


def test_enqueue_many_checks_options_shared_by_earlier_jobs_by_their_type_too() -> None:
    """Options found good on one job are not checked again on the next, unless a value
    equal to a good one is of another type: True is 1 to a set, not a priority."""
    jobs = [Job.objects.build(noop, priority=1) for _ in range(3)]
    jobs[2].priority = True
    with pytest.raises(InvalidJobError, match="priority must be an integer from -100 to 100, not True"):
        Job.objects.enqueue_many(jobs)
    assert Job.objects.count() == 0


def test_enqueue_many_checks_each_jobs_own_task_arguments_and_times_after_shared_options() -> None:
    """What jobs checked before spare a job is its task's look-up and its options' checks:
    a job of another task, or with arguments or a run time of its own, is checked as itself."""
    tomorrow = timezone.now() + datetime.timedelta(days=1)
    changes: list[tuple[dict[str, Any], str]] = [
        ({"task": "tests.testapp.tasks.report"}, "its arguments do not fit report(name)"),
        ({"args": [1]}, "its arguments do not fit add(a, b)"),
        ({"run_at": tomorrow.replace(tzinfo=None)}, "is naive but USE_TZ is on"),
        ({"meta": {"at": datetime.date(2030, 1, 1)}}, "meta['at'] is a datetime.date"),
    ]
    for changed, problem in changes:
        jobs = [Job.objects.build(add, [n, 1]) for n in range(3)]
        for name, value in changed.items():
            setattr(jobs[2], name, value)
        with pytest.raises(InvalidJobError, match=re.escape(problem)):
            Job.objects.enqueue_many(jobs)
    assert Job.objects.count() == 0


def test_enqueue_many_refuses_an_option_that_is_no_hashable_value_by_what_is_wrong() -> None:
    jobs = [Job.objects.build(noop, priority=1) for _ in range(2)]
    jobs[1].priority = [1]  # type: ignore[assignment]
    with pytest.raises(InvalidJobError, match=r"priority must be an integer from -100 to 100, not \[1\]"):
        Job.objects.enqueue_many(jobs)
    assert Job.objects.count() == 0


def test_enqueue_many_uses_few_statements() -> None:
    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL takes many jobs by COPY (test_copying.py)")
    jobs = [Job.objects.build(noop, [n]) for n in range(2500)]
    with CaptureQueriesContext(connection) as queries:
        Job.objects.enqueue_many(jobs, batch_size=1000)
    inserts = [query["sql"] for query in queries if query["sql"].lstrip().upper().startswith("INSERT")]
    # 1,000 + 1,000 + 500 rows, unless the database takes fewer parameters a statement
    # (SQLite before Django 6.0: 999), a row binding its values and perhaps its times.
    per_row = len(inserting._BOUND) + len(inserting._TIMED)
    rows_per_insert = min(1000, (connection.features.max_query_params or 1000 * per_row) // per_row)
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


# All or none, on every database


@pytest.fixture
def one_job_a_queue() -> Iterator[None]:
    """A unique index on ``queue``: the database refuses a second job on a queue when it
    INSERTs it, which no validation can know of beforehand."""
    # Not a UniqueConstraint: SQLite's schema editor would rebuild the table from the model.
    index = Index(fields=["queue"], name="test_one_job_a_queue")
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE UNIQUE INDEX {qn(index.name)} ON {qn(Job._meta.db_table)} ({qn('queue')})")
    try:
        yield
    finally:
        with connection.schema_editor() as editor:
            editor.remove_index(Job, index)


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_outside_a_transaction_writes_nothing_when_a_later_chunk_is_bad() -> None:
    """Issue 11, case 5: PostgreSQL refused the NUL only at the last chunk's INSERT, after
    the first chunks had committed; SQLite and MariaDB stored it."""
    jobs = [Job.objects.build(noop, [n]) for n in range(3)] + [Job.objects.build(noop, ["a\x00b"])]
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue_many(jobs, batch_size=1)
    assert str(excinfo.value) == f"Cannot enqueue tests.testapp.tasks.noop: args[0] {HOLDS_NUL}."
    assert Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_outside_a_transaction_writes_nothing_when_the_database_refuses_a_later_chunk(
    one_job_a_queue: None,
) -> None:
    jobs = [Job.objects.build(noop, queue=queue) for queue in ("first", "second", "first")]
    with pytest.raises(IntegrityError):
        Job.objects.enqueue_many(jobs, batch_size=1)
    assert Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_in_a_transaction_leaves_it_to_roll_back(one_job_a_queue: None) -> None:
    """Inside the caller's transaction a refused chunk marks that transaction for
    rollback, without a savepoint: a caller who catches the error cannot commit the
    chunks written before it."""
    with transaction.atomic():
        Job.objects.enqueue(noop, queue="before")
        with pytest.raises(IntegrityError):
            Job.objects.enqueue_many([Job.objects.build(noop, queue=queue) for queue in ("a", "b", "a")], batch_size=1)
    assert Job.objects.count() == 0


# What some database would refuse or change is refused on every database


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"args": ["a\x00b"]}, f"args[0] {HOLDS_NUL}"),
        ({"kwargs": {"k\x00": 1}}, f"kwargs has the key 'k\\x00', which {HOLDS_NUL}"),
        ({"args": [1, {"items": ["\ud800"]}]}, f"args[1]['items'][0] {HOLDS_SURROGATE}"),
        ({"args": [nested(31)]}, f"args{'[0]' * 31} {TOO_DEEP}"),
        ({"args": [nested(100_000)]}, f"args{'[0]' * 31} {TOO_DEEP}"),
        ({"args": [holding_itself()]}, f"args{'[0]' * 31} {TOO_DEEP}"),
        ({"args": [2**64]}, f"args[0] is an integer of 65 bits, {PAST_64_BITS}"),
        ({"args": [10**5000]}, f"args[0] is an integer of 16610 bits, {PAST_64_BITS}"),
        ({"args": [1e20]}, "args[0] is 1e+20, a float PostgreSQL would give back as an int: pass an int or a string"),
        ({"max_attempts": 2**31}, "max_attempts must be an integer from 1 to 2147483647, not 2147483648"),
        ({"timeout": 10**400}, f"timeout must be a positive number of seconds or None, not {10**400}"),
        ({"queue": "mail\x00"}, f"queue name 'mail\\x00' {HOLDS_NUL}"),
    ],
    ids=[
        "nul",
        "nul-key",
        "surrogate",
        "32-deep",
        "past-recursion-limit",
        "loop",
        "64-bits",
        "int-to-str",
        "1e20",
        "max_attempts",
        "timeout",
        "nul-queue",
    ],
)
def test_what_some_database_would_refuse_or_change_is_refused(options: dict[str, Any], problem: str) -> None:
    """Issue 11, case 7: each was stored by one database and refused by another (or
    raised RecursionError, or ValueError from int-to-str)."""
    args, kwargs = options.pop("args", ()), options.pop("kwargs", None)
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue(noop, args, kwargs, **options)
    assert str(excinfo.value) == f"Cannot enqueue tests.testapp.tasks.noop: {problem}."
    with pytest.raises(InvalidJobError):
        Job.objects.enqueue_many([Job.objects.build(noop), Job.objects.build(noop, args, kwargs, **options)])
    assert Job.objects.count() == 0


def test_the_deepest_arguments_and_widest_numbers_every_database_stores_and_no_more() -> None:
    """31 levels, counting the list of arguments and the dict of keyword arguments: the
    most MariaDB's JSON_VALID takes (checked against the server there)."""
    args = [nested(28, {"k": [2**63 - 1, -(2**63), 9.999999999999998e15, 5e-324, "😀 \x01"]})]
    kwargs = {"ключ": nested(30, "✓")}
    job = Job.objects.enqueue(noop, args, kwargs, max_attempts=2**31 - 1)
    job.refresh_from_db()
    assert (job.args, job.kwargs, job.max_attempts) == (args, kwargs, 2**31 - 1)
    with pytest.raises(InvalidJobError):
        Job.objects.enqueue(noop, kwargs={"ключ": nested(31, "✓")})
    if connection.vendor == "mysql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT JSON_VALID(%s), JSON_VALID(%s)", [json.dumps(nested(31)), json.dumps(nested(32))])
            assert cursor.fetchone() == (1, 0)
    assert Job.objects.count() == 1


# Times within the years 1 to 9999 in UTC

PAST_9999 = datetime.datetime.max.replace(tzinfo=datetime.timezone(-datetime.timedelta(hours=5)))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("run_at", "shown"),
    [
        (PAST_9999, "9999-12-31T23:59:59.999999-05:00"),
        (
            datetime.datetime.min.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
            "0001-01-01T00:00:00+01:00",
        ),
    ],
    ids=["after-9999", "before-1"],
)
def test_run_at_outside_the_years_1_to_9999_in_utc_is_refused(run_at: datetime.datetime, shown: str) -> None:
    """Issue 11, case 6: PostgreSQL stored the first, then raised DataError reading it
    back, after the row had committed."""
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue(noop, run_at=run_at)
    assert str(excinfo.value) == f"run_at {shown} is outside the years 1 to 9999 in UTC."
    job = Job.objects.build(noop)
    job.run_at = run_at  # after build(): enqueue_many checks it again
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue_many([job])
    assert str(excinfo.value) == (
        f"Cannot enqueue tests.testapp.tasks.noop: run_at {shown} is outside the years 1 to 9999 in UTC."
    )
    assert Job.objects.count() == 0


def test_run_at_at_the_ends_of_the_range_is_stored_and_one_past_is_not(settings: Any) -> None:
    ends = [
        datetime.datetime.max.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=5))),
        datetime.datetime.max.replace(tzinfo=datetime.timezone.utc),
        datetime.datetime.min.replace(tzinfo=datetime.timezone.utc),
    ]
    for run_at in ends:
        job = Job.objects.enqueue(noop, run_at=run_at)
        job.refresh_from_db()
        assert job.run_at == run_at
    with pytest.raises(InvalidJobError):
        Job.objects.enqueue(noop, run_at=PAST_9999)
    settings.USE_TZ = False  # a naive time is taken as it is
    job = Job.objects.enqueue(noop, run_at=datetime.datetime.max)
    job.refresh_from_db()
    assert job.run_at == datetime.datetime.max
    assert Job.objects.count() == len(ends) + 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("delay", [2.6e11, MAX_DELAY + datetime.timedelta(microseconds=1), 10**400])
def test_a_delay_that_could_reach_past_9999_is_refused(delay: Any) -> None:
    """Issue 11, case 6: PostgreSQL stored the database's now plus 2.6e11 s (a year past
    10000), then raised DataError reading it back, after the row had committed."""
    with pytest.raises(
        InvalidJobError, match=r"^delay must be a timedelta or a number of seconds from 0 to 365000 days"
    ):
        Job.objects.enqueue(noop, delay=delay)
    assert Job.objects.count() == 0


def test_the_longest_delay_is_stored_and_one_more_second_is_not() -> None:
    job = Job.objects.enqueue(noop, delay=MAX_DELAY)
    job.refresh_from_db()
    assert job.run_at - job.enqueued_at == MAX_DELAY
    with pytest.raises(InvalidJobError):
        Job.objects.enqueue(noop, delay=MAX_DELAY.total_seconds() + 1)
    assert Job.objects.count() == 1


def test_one_job_is_one_values_row_and_many_keyed_are_unnested_arrays_on_postgresql() -> None:
    """PostgreSQL plans UNNEST's arrays and casts for each statement: for the single row
    of an enqueue that cost a third of its speed; for many rows one text is parsed once.
    Many jobs without keys go by COPY there (test_copying.py)."""
    with CaptureQueriesContext(connection) as queries:
        Job.objects.enqueue(noop, [1])
        Job.objects.enqueue_many([Job.objects.build(noop, [n], unique_key=f"k{n}") for n in range(3)])
    one, many = [query["sql"] for query in queries if query["sql"].startswith("INSERT")]
    assert "UNNEST" not in one
    assert ("UNNEST" in many) == (connection.vendor == "postgresql")
    assert sorted(args for (args,) in Job.objects.values_list("args")) == [[0], [1], [1], [2]]


def test_enqueues_on_one_connection_compile_their_statement_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    monkeypatch.setattr(inserting.JobInserts, "__init__", counting(inserting.JobInserts.__init__, made))
    engines.forget()
    jobs = [Job.objects.enqueue(noop, delay=delay) for delay in (None, 5, None)]
    jobs += Job.objects.enqueue_many(Job.objects.build(noop) for _ in range(3))
    Job.objects.enqueue_rows([(noop, (), {})] * 3)
    assert len(made) == 1
    assert len({job.pk for job in jobs}) == 6
    assert Job.objects.count() == 9


@override_settings(SQLQUEUE_ENQUEUE_HOOKS=["tests.support.middleware.urgent"])
def test_the_enqueue_hooks_see_each_job_before_it_is_checked_and_written() -> None:
    NOTED.clear()
    one = Job.objects.enqueue(noop, kwargs={"urgent": True})
    many = Job.objects.enqueue_many([Job.objects.build(noop), Job.objects.build(noop, kwargs={"urgent": True})])
    assert [job.priority for job in Job.objects.filter(pk__in=[one.pk, *[job.pk for job in many]]).order_by("pk")] == [
        9,
        0,
        9,
    ]
    assert NOTED == ["hook tests.testapp.tasks.noop saved False"] * 3
    # What a hook set is checked as the caller's own.
    with pytest.raises(InvalidJobError, match="priority"):
        Job.objects.enqueue(noop, kwargs={"urgent": 10**9})
    NOTED.clear()


@override_settings(SQLQUEUE_ENQUEUE_HOOKS=["tests.support.nowhere.hook"])
def test_an_enqueue_hook_that_cannot_be_imported_is_a_system_check_error() -> None:
    (error,) = [error for error in checks.check_settings() if error.id == "sqlqueue.E040"]
    assert error.msg.startswith("SQLQUEUE_ENQUEUE_HOOKS: cannot import 'tests.support.nowhere.hook': ")
    with pytest.raises(ImproperlyConfigured, match="SQLQUEUE_ENQUEUE_HOOKS: cannot import"):
        Job.objects.enqueue(noop)
    assert not Job.objects.exists()


@pytest.fixture
def jobs_table_missing() -> Iterator[None]:
    """The jobs table renamed away for one test, as if ``migrate`` had not made it
    (MySQL/MariaDB commit a rename at once: the test's transaction does not cover it)."""
    table = Job._meta.db_table
    with connection.schema_editor() as editor:
        editor.alter_db_table(Job, table, f"{table}_away")
    try:
        yield
    finally:
        with connection.schema_editor() as editor:
            editor.alter_db_table(Job, f"{table}_away", table)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("jobs_table_missing")
def test_an_enqueue_without_the_tables_says_to_run_migrate() -> None:
    said = "The queue's tables are missing from the database 'default', or older than its migrations"
    for enqueue in (
        lambda: Job.objects.enqueue(noop),
        lambda: Job.objects.enqueue_many([Job.objects.build(noop), Job.objects.build(noop)]),
        lambda: Job.objects.enqueue_rows([(noop, [], {})]),
    ):
        with pytest.raises(TablesNotMigrated) as excinfo:
            enqueue()
        assert str(excinfo.value).startswith(said)
        assert str(excinfo.value).endswith("): run manage.py migrate.")
