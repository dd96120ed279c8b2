"""The jobs' status check is worded as ORs of equalities (``any_of``), and migration
0031 (``RewordSQLiteCheck``) remakes an existing SQLite table that way, keeping its
rows, tags, indexes and ``AUTOINCREMENT`` counter; PostgreSQL and MariaDB keep the
``IN`` they have, which says the same. SQLite evaluates an ``IN`` of more than two values
with a temporary table on every claimed and finished row."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.models import Job, JobTag
from django_sqlqueue.rules.lifecycle import JobStatus
from tests.support.migrating import migrate, sqlmigrate
from tests.testapp.tasks import noop

BEFORE = "0030_unique_key_index_tests_the_key_first"
NAME = "sqlqueue_job_status_valid"
TABLE = Job._meta.db_table


def schema() -> dict[str, str]:
    """SQLite's stored statements, by name (its own automatic indexes have none)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL")
        return dict(cursor.fetchall())


def counter() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [TABLE])
        (row,) = cursor.fetchall()
    return int(row[0])


@pytest.fixture
def sqlite_at_0030_with_the_in_wording() -> Iterator[None]:
    """SQLite's jobs table as 0022 to 0030 made it, its status check an ``IN``; the app
    migrated to its last migration afterwards."""
    if connection.vendor != "sqlite":
        pytest.skip("0031 remakes the table on SQLite only")
    migrate(BEFORE)
    old = MigrationExecutor(connection).loader.project_state(("django_sqlqueue", BEFORE)).apps
    model = old.get_model("django_sqlqueue", "Job")
    (check,) = [constraint for constraint in model._meta.constraints if constraint.name == NAME]
    with connection.schema_editor() as editor:
        editor.add_constraint(model, check)  # SQLite: the table remade as 0030's state says
    assert "\"status\" IN ('WAITING'" in schema()[TABLE]
    yield
    migrate(None)


def refuses_a_bad_status(job: Job) -> bool:
    try:
        with transaction.atomic():
            Job.objects.filter(pk=job.pk).update(status="LOST")
    except IntegrityError:
        return True
    return False


@pytest.mark.django_db
def test_the_status_check_refuses_what_is_not_a_status() -> None:
    job = Job.objects.enqueue(noop)
    assert refuses_a_bad_status(job)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)  # each status passes


@pytest.mark.django_db
def test_sqlites_status_check_has_no_in() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's wording")
    table = schema()[TABLE]
    assert '"status" IN (' not in table
    assert " OR ".join(f"\"status\" = '{status}'" for status in JobStatus.values) in table


@pytest.mark.django_db(transaction=True)
def test_0031_remakes_sqlites_table_keeping_rows_tags_indexes_and_counter(
    sqlite_at_0030_with_the_in_wording: None,
) -> None:
    jobs = [Job.objects.enqueue(noop, args=[n], tags=["t"] if n == 0 else ()) for n in range(5)]
    Job.objects.filter(pk=jobs[1].pk).update(status=JobStatus.RUNNING, worker="w", attempts=1)
    Job.objects.filter(pk=jobs[2].pk).update(status=JobStatus.FAILED, last_error_class="ValueError")
    Job.objects.filter(pk=jobs[4].pk).delete()  # the highest id: the counter stays above the rows
    rows: list[Any] = list(Job.objects.order_by("pk").values_list())
    before = schema()
    seq = counter()

    migrate(None)

    after = schema()
    assert '"status" IN (' not in after[TABLE]
    assert {name: sql for name, sql in after.items() if name != TABLE} == {
        name: sql for name, sql in before.items() if name != TABLE
    }
    assert list(Job.objects.order_by("pk").values_list()) == rows
    assert list(JobTag.objects.values_list("job_id", "tag")) == [(jobs[0].pk, "t")]
    assert counter() == seq
    assert Job.objects.enqueue(noop).pk == seq + 1  # not the deleted job's id again
    assert refuses_a_bad_status(jobs[0])
    Job.objects.filter(pk=jobs[0].pk).delete()
    assert not JobTag.objects.exists()  # the tags' foreign key still cascades

    migrate(BEFORE)  # back: nothing to undo
    assert schema()[TABLE] == after[TABLE]


@pytest.mark.django_db(transaction=True)
def test_sqlmigrate_prints_the_remake_with_the_counter() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("0031 writes statements on SQLite only")
    printed = sqlmigrate("0031")
    assert f'CREATE TABLE "new__{TABLE}"' in printed
    assert "UPDATE sqlite_sequence SET seq = MAX(seq," in printed


@pytest.mark.django_db(transaction=True)
def test_0031_runs_nothing_on_postgresql_or_mariadb() -> None:
    if connection.vendor == "sqlite":
        pytest.skip("SQLite's table is remade")
    migrate(BEFORE)
    with CaptureQueriesContext(connection) as ran:
        migrate(None)
    assert not [query["sql"] for query in ran.captured_queries if NAME in query["sql"] or "ALTER" in query["sql"]]
    printed = sqlmigrate("0031").splitlines()
    assert not [line for line in printed if line and not line.startswith(("--", "BEGIN", "COMMIT"))]
