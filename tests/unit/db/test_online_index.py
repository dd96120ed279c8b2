"""Remaking an index online (``online_index.ReplaceIndex``): on PostgreSQL concurrently,
never inside a transaction, and again after an interrupted run."""

from __future__ import annotations

from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection, models, transaction
from django.db.migrations.state import ProjectState

from django_sqlqueue.db.online_index import ReplaceIndex

OLD = models.Index(fields=["finished_at", "status"], name="sqlqueue_job_finished")
NEW = models.Index(fields=["finished_at"], name="sqlqueue_job_finished")


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("CREATE INDEX CONCURRENTLY is PostgreSQL's")


def migrate(target: str | None) -> None:
    args = ["django_sqlqueue"] if target is None else ["django_sqlqueue", target]
    call_command("migrate", *args, verbosity=0, stdout=StringIO())


def test_the_index_keeps_its_name() -> None:
    with pytest.raises(ValueError, match="keeps the index's name"):
        ReplaceIndex(model_name="job", old=OLD, new=models.Index(fields=["finished_at"], name="other"))


def test_it_deconstructs_to_itself() -> None:
    name, args, kwargs = ReplaceIndex(model_name="job", old=OLD, new=NEW).deconstruct()
    assert (name, args, kwargs) == ("ReplaceIndex", [], {"model_name": "job", "old": OLD, "new": NEW})


def test_the_state_has_the_new_index() -> None:
    state = ProjectState.from_apps(apps)
    ReplaceIndex(model_name="job", old=OLD, new=NEW).state_forwards("django_sqlqueue", state)
    indexes = state.models["django_sqlqueue", "job"].options["indexes"]
    assert [index for index in indexes if index.name == "sqlqueue_job_finished"] == [NEW]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("postgresql")
def test_postgresql_refuses_inside_a_transaction_and_changes_nothing() -> None:
    state = ProjectState.from_apps(apps)
    operation = ReplaceIndex(model_name="job", old=OLD, new=NEW)
    with (
        pytest.raises(RuntimeError, match="atomic = False"),
        transaction.atomic(),
        connection.schema_editor() as editor,
    ):
        operation.database_forwards("django_sqlqueue", editor, state, state)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'sqlqueue_job_finished%%'")
        assert [row[0] for row in cursor.fetchall()] == [
            "CREATE INDEX sqlqueue_job_finished ON public.django_sqlqueue_job USING btree (finished_at, status) "
            "WHERE (finished_at IS NOT NULL)"
        ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("postgresql")
def test_a_run_interrupted_after_dropping_the_old_index_is_finished_by_the_next() -> None:
    migrate("0024_job_snoozes")
    with connection.cursor() as cursor:  # as a run stopped before its rename leaves it
        cursor.execute("DROP INDEX sqlqueue_job_finished")
        cursor.execute("CREATE INDEX sqlqueue_job_finished_new ON django_sqlqueue_job (finished_at)")
    migrate(None)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'sqlqueue_job_finished%%'")
        assert cursor.fetchall() == [
            (
                "sqlqueue_job_finished",
                "CREATE INDEX sqlqueue_job_finished ON public.django_sqlqueue_job USING btree (finished_at, status) "
                "WHERE (finished_at IS NOT NULL)",
            )
        ]
