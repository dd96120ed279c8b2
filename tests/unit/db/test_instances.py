"""``db/instances.py``: the jobs a claim builds from its rows are the jobs the ORM reads,
and ``Job.objects.build()`` makes the job ``Job(...)`` would, both without
``Model.__init__`` unless a receiver of ``pre_init``/``post_init`` listens."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from django.db import connection, connections
from django.db.models import Field
from django.db.models.signals import post_init, pre_init

from django_sqlqueue import conf as conf_module
from django_sqlqueue.db import engines
from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.instances import JobRows, unsaved
from django_sqlqueue.db.schema.table import AbstractJob
from django_sqlqueue.models import Job, JobStatus
from tests.support.spies import counting
from tests.testapp.tasks import noop, report

UTC = datetime.timezone.utc


def values(job: AbstractJob) -> dict[str, Any]:
    return {field.attname: getattr(job, field.attname) for field in Job._meta.concrete_fields}


def claim_one_of_each() -> list[Job]:
    """A plain job and one with every optional column set (JSON of every kind, a
    timeout, a concurrency key, a unique key kept until pruned), claimed together."""
    Job.objects.enqueue(noop)
    Job.objects.enqueue(
        noop,
        ("ünïcode ✓",),
        {"nested": {"list": [1, 2.5, None, True]}},
        priority=3,
        timeout=2.5,
        run_at=datetime.datetime(2001, 2, 3, 4, 5, 6, 789000, tzinfo=UTC),
        concurrency_key="tenant-7",
        concurrency_limit=2,
        unique_key="order-42",
        unique_until="pruned",
    )
    claimed = Job.objects.claim(worker_id="w", limit=10)
    assert len(claimed) == 2
    return claimed


@pytest.mark.django_db
def test_claimed_jobs_are_the_jobs_the_orm_reads() -> None:
    for job in claim_one_of_each():
        stored = Job.objects.get(pk=job.pk)
        assert values(job) == values(stored)
        # Of the same types too (a JobStatus is a str): no JSON left as text, no naive datetime.
        assert all(isinstance(value, type(values(stored)[name])) for name, value in values(job).items())
        assert job._state.adding is False
        assert job._state.db == "default"
        assert job.status == JobStatus.RUNNING
        assert job.started_at is not None
        assert job.started_at.tzinfo is not None


@pytest.mark.django_db
def test_claimed_jobs_save_and_refresh_as_read_jobs_do() -> None:
    job = claim_one_of_each()[0]
    job.priority = 7
    job.save(update_fields=["priority"])
    assert Job.objects.get(pk=job.pk).priority == 7
    Job.objects.filter(pk=job.pk).update(priority=9)
    job.refresh_from_db()
    assert job.priority == 9


@pytest.fixture
def inits(monkeypatch: pytest.MonkeyPatch) -> list[Job]:
    """The jobs ``Job.__init__`` makes from now on."""
    made = []
    original = Job.__init__

    def counted(self: Job, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Job, "__init__", counted)
    return made


@pytest.mark.django_db
def test_claimed_jobs_are_built_without_init(inits: list[Job]) -> None:
    Job.objects.enqueue_many([Job.objects.build(noop, (index,)) for index in range(3)])
    claimed = Job.objects.claim(worker_id="w", limit=3)
    assert len(claimed) == 3
    assert inits == []


@pytest.mark.django_db
@pytest.mark.parametrize("signal", [pre_init, post_init])
def test_receivers_of_init_signals_see_every_claimed_job(signal: Any) -> None:
    seen = []

    def receiver(sender: type[Job], **named: Any) -> None:
        seen.append(named)

    Job.objects.enqueue_many([Job.objects.build(noop, (index,)) for index in range(3)])
    signal.connect(receiver, sender=Job)
    try:
        claimed = Job.objects.claim(worker_id="w", limit=3)
    finally:
        signal.disconnect(receiver, sender=Job)
    assert len(claimed) == 3
    if signal is post_init:
        assert [named["instance"] for named in seen] == claimed
    else:
        assert len(seen) == 3


@pytest.mark.django_db
def test_rows_are_converted_as_the_orm_converts_them() -> None:
    Job.objects.enqueue(noop, ("x",), {"a": [1]}, timeout=1.5)
    rows = JobRows(Job, connection)
    table = connection.ops.quote_name(Job._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {rows.columns} FROM {table}")
        (job,) = rows.jobs(cursor.fetchall())
    assert values(job) == values(Job.objects.get())
    assert (job.args, job.kwargs, job.timeout, job.unique_until_pruned) == (["x"], {"a": [1]}, 1.5, False)


@pytest.mark.django_db
def test_empty_json_is_read_without_the_decoder_into_a_list_or_dict_of_each_jobs_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Job.objects.enqueue_many([Job.objects.build(noop), Job.objects.build(noop, ("x",), {"a": [1]})])
    decoded: list[str] = []
    loads = json.loads

    def counted(text: str, **options: Any) -> Any:
        decoded.append(text)
        return loads(text, **options)

    monkeypatch.setattr(json, "loads", counted)
    rows = JobRows(Job, connection)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {rows.columns} FROM {connection.ops.quote_name(Job._meta.db_table)} ORDER BY id")
        first, second = rows.jobs(cursor.fetchall())
    assert sorted(decoded) == ['["x"]', '{"a": [1]}']
    assert (first.args, first.kwargs, first.errors, second.errors) == ([], {}, [], [])
    assert first.args is not first.errors
    assert first.errors is not second.errors
    first.args.append(1)
    assert (first.errors, second.errors) == ([], [])


def test_every_converter_of_the_job_gives_none_for_none_so_a_null_skips_them() -> None:
    rows = JobRows(Job, connection)
    assert rows.converted([[None] * len(rows.attnames)]) == [[None] * len(rows.attnames)]
    for converters, expression in dict(rows._converters).values():
        for converter in converters:
            assert converter(None, expression, connection) is None, (expression, converter)


def test_a_null_is_not_handed_to_the_converters(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = JobRows(Job, connection)
    seen: list[Any] = []

    def spy(value: Any, expression: Any, connection: Any) -> Any:
        seen.append(value)
        return value

    monkeypatch.setattr(
        rows, "_converters", [(position, ([spy], expression)) for position, (_, expression) in rows._converters]
    )
    row: list[Any] = [None] * len(rows.attnames)
    row[rows.attnames.index("args")] = "[]"
    rows.converted([row])
    assert seen == ["[]"]


@pytest.mark.django_db
def test_claims_on_one_connection_read_its_columns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    Job.objects.enqueue_many(Job.objects.build(noop) for _ in range(3))
    made: list[Any] = []
    monkeypatch.setattr(JobRows, "__init__", counting(JobRows.__init__, made))
    engines.forget()
    for _ in range(3):
        assert len(Job.objects.claim(worker_id="w", limit=1)) == 1
    assert len(made) == 1
    kept = engine(connections["default"])
    assert kept.made(JobRows, Job) is kept.made(JobRows, Job)


# New jobs: Job.objects.build()


def test_a_built_job_is_the_job_the_model_makes() -> None:
    built = Job.objects.build(report, ("x",), {"y": 1}, concurrency_key="k", concurrency_limit=1)
    made = Job(
        task=built.task,
        args=["x"],
        kwargs={"y": 1},
        queue="reports",
        priority=10,
        max_attempts=2,
        timeout=5,
        concurrency_key="k",
        concurrency_limit=1,
    )
    assert values(built) == values(made)
    assert {name: type(value) for name, value in values(built).items()} == {
        name: type(value) for name, value in values(made).items()
    }
    assert built._state.adding is True
    assert built._state.db is None
    assert built.pk is None


def test_built_jobs_have_defaults_of_their_own() -> None:
    first, second = Job.objects.build(noop), Job.objects.build(noop)
    first.errors.append("changed")
    assert second.errors == []
    assert first.args is not second.args


def test_builds_work_out_the_defaults_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each field's default and each setting a task leaves to the settings, for every
    job built, cost ``enqueue_many`` about two fifths of its time."""
    Job.objects.build(noop)
    reads: list[Any] = []
    defaults: list[Any] = []
    read = conf_module._read

    def counted(name: str, default: Any) -> Any:
        reads.append(name)
        return read(name, default)

    monkeypatch.setattr(conf_module, "_read", counted)
    monkeypatch.setattr(Field, "get_default", counting(Field.get_default, defaults))
    built = [Job.objects.build(noop, (n,)) for n in range(3)]
    assert (reads, defaults) == ([], [])
    assert [(job.queue, job.max_attempts, job.timeout, job.args) for job in built] == [
        ("default", 3, None, [n]) for n in range(3)
    ]


def test_a_build_takes_the_settings_in_force(settings: Any) -> None:
    assert Job.objects.build(noop).queue == "default"
    settings.SQLQUEUE_DEFAULT_QUEUE = "elsewhere"
    settings.SQLQUEUE_MAX_ATTEMPTS = 7
    settings.SQLQUEUE_TIMEOUT = 30
    built = Job.objects.build(noop)
    assert (built.queue, built.max_attempts, built.timeout) == ("elsewhere", 7, 30.0)


def test_jobs_are_built_without_init_unless_a_receiver_listens(inits: list[Job]) -> None:
    Job.objects.build(noop)
    assert inits == []

    def receiver(sender: type[Job], **named: Any) -> None:
        pass

    post_init.connect(receiver, sender=Job)
    try:
        job = Job.objects.build(noop)
    finally:
        post_init.disconnect(receiver, sender=Job)
    assert inits == [job]


def test_an_unknown_field_is_refused_as_the_model_refuses_it() -> None:
    with pytest.raises(TypeError, match="unexpected keyword arguments: colour"):
        unsaved(Job, task="t", colour="blue")
