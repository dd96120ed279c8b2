"""The names the queue matches on (``db/schema/names.py``) compare byte for byte on every
database: a queue, key or worker name never stands for another that differs in case,
accents or trailing spaces, as it did under MariaDB's usual collations."""

from __future__ import annotations

import datetime

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, models

from django_sqlqueue import pause_queue
from django_sqlqueue.db import leadership
from django_sqlqueue.db.pausing import paused_queues
from django_sqlqueue.db.schema.names import NameField, binary_collation
from django_sqlqueue.models import (
    ConcurrencyKey,
    FinishedHour,
    Job,
    JobStatus,
    Leader,
    PausedQueue,
    RateBucket,
    Schedule,
    Worker,
)
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db

#: Equal under utf8mb4_unicode_ci (case, accents, trailing spaces); all different here.
NAMES = ["reports", "Reports", "REPORTS", "reports ", "répörts"]


def test_a_claim_takes_only_its_queues_exact_name() -> None:
    jobs = {name: Job.objects.enqueue(noop, queue=name) for name in NAMES}
    claimed = Job.objects.claim(worker_id="w", queues=["reports"], limit=10)
    assert [job.pk for job in claimed] == [jobs["reports"].pk]
    assert Job.objects.get_queryset().in_queues(["Reports"]).get().pk == jobs["Reports"].pk


def test_pausing_a_queue_pauses_only_that_name() -> None:
    for name in NAMES:
        Job.objects.enqueue(noop, queue=name)
    assert pause_queue("reports") is True
    claimed = Job.objects.claim(worker_id="w", skip_queues=frozenset(paused_queues()), limit=10)
    assert sorted(job.queue for job in claimed) == sorted(NAMES[1:])
    assert all(pause_queue(name) for name in NAMES[1:])
    assert sorted(paused_queues()) == sorted(NAMES)


def test_concurrency_keys_that_differ_only_in_case_accents_or_spaces_are_separate() -> None:
    for name in NAMES:
        Job.objects.enqueue(noop, concurrency_key=name, concurrency_limit=1)
    # One at a time: each claim counts the RUNNING jobs of the next key.
    claimed = [job for _ in NAMES for job in Job.objects.claim(worker_id="w", limit=1)]
    assert sorted(str(job.concurrency_key) for job in claimed) == sorted(NAMES)


def test_unique_keys_that_differ_only_in_case_accents_or_spaces_are_separate() -> None:
    jobs = [Job.objects.enqueue(noop, unique_key=name) for name in NAMES]
    assert [job.created for job in jobs] == [True] * len(NAMES)
    assert [Job.objects.get(unique_key=name).pk for name in NAMES] == [job.pk for job in jobs]


def test_a_worker_name_fences_only_its_own_jobs() -> None:
    for name in NAMES:
        Worker.objects.create(name=name, host="h", pid=1)
        Job.objects.enqueue(noop)
        Job.objects.claim(worker_id=name, limit=1)
    assert Job.objects.filter(status=JobStatus.RUNNING, worker="reports").count() == 1
    assert Worker.objects.filter(name__in=["reports"]).count() == 1


def test_a_lease_holder_is_only_its_exact_name() -> None:
    lease = datetime.timedelta(minutes=1)
    assert leadership.acquire("reports", lease, DEFAULT_DB_ALIAS) is True
    assert [leadership.acquire(name, lease, DEFAULT_DB_ALIAS) for name in NAMES[1:]] == [False] * 4
    for name in NAMES:
        far = datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc)
        Leader.objects.create(role=name, holder="h", expires_at=far)
    assert Leader.objects.filter(role__in=NAMES).count() == len(NAMES)


def test_schedule_and_rate_limit_names_are_exact() -> None:
    start = datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc)
    for name in NAMES:
        Schedule.objects.create(key=name, task="t", expression="every 1", tz="UTC", missed="skip", last_tick_at=start)
        RateBucket.objects.create(name=name, tokens=1)
    assert [Schedule.objects.get(key=name).key for name in NAMES] == NAMES
    assert [RateBucket.objects.get(name=name).name for name in NAMES] == NAMES


@pytest.mark.skipif(connection.vendor != "mysql", reason="only MySQL/MariaDB collate the columns themselves")
def test_every_name_column_has_the_binary_collation() -> None:
    columns = [
        (model._meta.db_table, field.column)
        for model in (Job, Worker, Schedule, Leader, PausedQueue, FinishedHour, ConcurrencyKey, RateBucket)
        for field in model._meta.concrete_fields
        if isinstance(field, NameField)
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name, collation_name FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name LIKE 'django_sqlqueue%%'"
        )
        collations = {(table, column): collation for table, column, collation in cursor.fetchall()}
    assert len(columns) == 14
    assert {column: collations[column] for column in columns} == dict.fromkeys(columns, binary_collation(connection))


def test_elsewhere_the_field_is_a_plain_char_field() -> None:
    parameters = NameField(max_length=10).db_parameters(connection)
    expected = models.CharField(max_length=10).db_parameters(connection)
    if connection.vendor == "mysql":
        expected["collation"] = binary_collation(connection)
    assert parameters == expected
