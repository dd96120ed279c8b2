"""The migrations (``django_sqlqueue/migrations/``): in step with the models, reversible,
and PostgreSQL's extras."""

from __future__ import annotations

from io import StringIO
from typing import Any

import django
import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from django_sqlqueue.models import Job
from tests.support.migrating import migrate
from tests.support.schema import describe, old_chain_schema
from tests.testapp.tasks import noop

JOB_TABLE = Job._meta.db_table
INDEXES = {"sqlqueue_job_ready", "sqlqueue_job_ready_queue", "sqlqueue_job_running", "sqlqueue_job_failed"}
AUTOVACUUM = [
    "autovacuum_vacuum_scale_factor=0.01",
    "autovacuum_vacuum_threshold=1000",
    "autovacuum_vacuum_cost_delay=0",
    "autovacuum_analyze_scale_factor=0.02",
]


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("table storage parameters and triggers exist on PostgreSQL only")


def tables() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


def constraint_names() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.get_constraints(cursor, JOB_TABLE))


def reloptions() -> list[str] | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass", [JOB_TABLE])
        options: list[str] | None = cursor.fetchone()[0]
        return options


def notify_trigger_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM pg_trigger WHERE tgname = 'sqlqueue_job_notify' AND tgrelid = %s::regclass",
            [JOB_TABLE],
        )
        return bool(cursor.fetchone()[0])


def notify_function_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM pg_proc WHERE proname = 'sqlqueue_job_notify'")
        return bool(cursor.fetchone()[0])


@pytest.mark.django_db
def test_models_and_migrations_agree() -> None:
    stdout = StringIO()
    try:
        call_command("makemigrations", "django_sqlqueue", "--check", "--dry-run", stdout=stdout)
    except SystemExit:
        pytest.fail(
            "The models changed without a migration. Run `python manage.py makemigrations django_sqlqueue "
            f"--name <what_changed>` and commit it:\n{stdout.getvalue()}"
        )
    assert stdout.getvalue() == "No changes detected in app 'django_sqlqueue'\n"


#: The one thing the chain left worded otherwise on PostgreSQL and MySQL/MariaDB: the jobs'
#: status check, an ``IN`` there, reworded as ORs on SQLite only (``IN`` of more than two
#: values costs SQLite a temporary table per row); the initial migration writes the ORs
#: everywhere, which say the same.
REWORDED = "sqlqueue_job_status_valid"
#: The migrations, the squashed one first.
MIGRATIONS = [
    ("django_sqlqueue", "0001_initial"),
    ("django_sqlqueue", "0002_job_insert_token"),
    ("django_sqlqueue", "0003_job_edit_permissions"),
]
#: The columns the migrations after the squashed one added, by table: each nullable,
#: with no default to write into the rows a table already holds.
ADDED_SINCE = {JOB_TABLE: ["insert_token"]}


def _nullable(column: list[Any]) -> bool:
    """Whether a described column (``tests/support/schema.py``) allows NULL and has no default."""
    if connection.vendor == "sqlite":
        _, not_null, default, _ = column
        return not not_null and default is None
    if connection.vendor == "postgresql":
        return column[3] == "YES" and column[4] is None
    return column[1] == "YES" and column[2] in (None, "NULL")


@pytest.mark.django_db
@pytest.mark.skipif(
    connection.vendor == "sqlite" and django.VERSION < (6, 1),
    reason="the chain's schema was kept as Django 6.1 writes SQLite's index conditions; 5.2 writes a boolean's "
    'as "unique_until_pruned", not "unique_until_pruned" = 1',
)
def test_the_initial_migration_builds_what_the_chain_it_replaced_built() -> None:
    """The chain of 0001 to 0031 was squashed into ``0001_initial`` before 0.1.0; the
    schema that chain built on each database is kept in ``tests/support/schema/``. The
    migrations since add what :data:`ADDED_SINCE` names, and nothing else."""
    squashed, chain = describe(), old_chain_schema()
    for table, columns in ADDED_SINCE.items():
        added = {name: squashed[table]["columns"].pop(name) for name in columns}
        assert all(_nullable(described) for described in added.values()), added
    if connection.vendor != "sqlite":
        checks = "constraints" if connection.vendor == "postgresql" else "checks"
        assert " or " in squashed[JOB_TABLE][checks].pop(REWORDED).lower()
        assert "'CANCELLED'" in chain[JOB_TABLE][checks].pop(REWORDED)
    assert squashed == chain


def test_a_new_project_applies_the_squashed_migration_and_those_since() -> None:
    """Nothing was released before 0.1.0, so its chain was squashed into one."""
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    assert [node for node in graph.leaf_nodes() if node[0] == "django_sqlqueue"] == [MIGRATIONS[-1]]
    assert sorted(node for node in graph.nodes if node[0] == "django_sqlqueue") == MIGRATIONS


@pytest.mark.django_db
def test_indexes_and_constraints_exist() -> None:
    assert constraint_names() >= INDEXES | {
        "sqlqueue_job_priority_range",
        "sqlqueue_job_max_attempts_min",
        "sqlqueue_job_timeout_positive",
        "sqlqueue_job_status_valid",
        "sqlqueue_job_queue_not_empty",
    }


@pytest.mark.django_db
@pytest.mark.usefixtures("postgresql")
def test_autovacuum_is_tuned_on_postgresql() -> None:
    assert reloptions() == AUTOVACUUM


@pytest.mark.django_db(transaction=True)
def test_migrations_reverse_and_apply_again() -> None:
    migrate("zero")
    assert JOB_TABLE not in tables()
    assert "django_sqlqueue_worker" not in tables()

    migrate(None)
    assert {JOB_TABLE, "django_sqlqueue_worker"} <= tables()
    assert constraint_names() >= INDEXES
    job = Job.objects.enqueue(noop)
    assert [claimed.pk for claimed in Job.objects.claim(worker_id="w")] == [job.pk]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("postgresql")
def test_postgresql_migrations_reverse_and_apply_again() -> None:
    migrate("zero")
    assert not notify_function_exists()

    migrate(None)
    assert reloptions() == AUTOVACUUM
    assert notify_trigger_exists()
