"""The unique-key index tests the key before the statuses (``ActiveKeyConstraint``), and
migration 0030 (``RemakeSQLiteConstraint``) rewords an existing SQLite database's index
that way, leaving PostgreSQL's as it is: on SQLite, a claim or finish of a keyless job
no longer evaluates ``status IN (…)`` of three values, which built a temporary table for
each row (27% of SQLite's work per job)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection, models
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.db.indexes import ActiveKeyConstraint
from django_sqlqueue.models import Job
from tests.support.migrating import migrate, sqlmigrate
from tests.testapp.tasks import noop

NAME = "sqlqueue_job_unique_key"
KEY_FIRST = 'WHERE ("unique_key" IS NOT NULL AND '


@pytest.fixture
def at_0029_with_the_old_wording() -> Iterator[str]:
    """The app at 0029, its unique-key index worded as 0022 to 0029 made it (the statuses
    first); migrated to its last migration afterwards. Yields that old statement."""
    if not connection.features.supports_partial_indexes:
        pytest.skip("MySQL/MariaDB's stand-in is a hidden column's unique index")
    migrate("0029_finished_indexes_hidden")
    constraint = ActiveKeyConstraint(name=NAME, kept=True)
    old = models.UniqueConstraint(
        fields=["unique_key"], condition=constraint.holding() & models.Q(unique_key__isnull=False), name=NAME
    )
    with connection.schema_editor() as editor:
        editor.execute(f"DROP INDEX {editor.quote_name(NAME)}")
        statement = str(old.create_sql(Job, editor))
        editor.execute(statement)
    yield statement
    migrate(None)


def stored() -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [NAME])
        else:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [NAME])
        (row,) = cursor.fetchall()
    return str(row[0])


@pytest.mark.django_db
def test_a_keyless_job_stops_at_the_keys_test() -> None:
    if not connection.features.supports_partial_indexes:
        pytest.skip("MySQL/MariaDB's stand-in is a hidden column's unique index")
    editor = connection.schema_editor()  # only to word the statement: not entered
    statement = str(ActiveKeyConstraint(name=NAME, kept=True).create_sql(Job, editor))
    assert KEY_FIRST in statement
    assert "'WAITING'" in statement


@pytest.mark.django_db(transaction=True)
def test_0030_rewords_sqlites_index_and_the_key_still_holds(at_0029_with_the_old_wording: str) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("0030 remakes the index on SQLite only")
    assert KEY_FIRST not in stored()
    migrate(None)
    assert KEY_FIRST in stored()
    first = Job.objects.enqueue(noop, unique_key="k")
    assert Job.objects.enqueue(noop, unique_key="k").pk == first.pk
    migrate("0029_finished_indexes_hidden")  # back: nothing to undo
    assert KEY_FIRST in stored()
    with CaptureQueriesContext(connection) as ran:  # again: the statement is the same
        migrate("0030_unique_key_index_tests_the_key_first")
    assert not [query for query in ran.captured_queries if "INDEX" in query["sql"]]


@pytest.mark.django_db(transaction=True)
def test_sqlmigrate_prints_the_drop_and_the_create_whatever_the_database_holds() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("0030 writes statements on SQLite only")
    printed = sqlmigrate("0030")
    assert f'DROP INDEX IF EXISTS "{NAME}"' in printed
    assert KEY_FIRST in printed


@pytest.mark.django_db(transaction=True)
def test_0030_leaves_postgresqls_index_as_it_is(at_0029_with_the_old_wording: str) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's index is not remade")
    before = stored()
    migrate(None)
    assert stored() == before
