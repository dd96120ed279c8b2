"""Remaking an index online (``online_index.ReplaceIndex``): on PostgreSQL concurrently,
never inside a transaction; on MySQL/MariaDB beside the old one, each statement one the
server runs without blocking writes; on both again after an interrupted run."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import import_module

import pytest
from django.apps import apps
from django.db import connection, models, transaction
from django.db.migrations.state import ProjectState

from django_sqlqueue.db.indexes import FINISHED_JOBS, HiddenFinishedIndex, HiddenStatusIndex, StatusIndex
from django_sqlqueue.db.online_index import ReplaceIndex
from django_sqlqueue.models import Job
from tests.support.migrating import migrate

OLD = models.Index(fields=["finished_at", "status"], name="sqlqueue_job_finished")
NEW = models.Index(fields=["finished_at"], name="sqlqueue_job_finished")
#: Migration 0027's pair: on MySQL/MariaDB ``(status, queue)``, then a hidden column's index.
WAITING = StatusIndex(status="WAITING", fields=["queue"], name="sqlqueue_job_waiting")
HIDDEN_WAITING = HiddenStatusIndex(status="WAITING", field="queue", name="sqlqueue_job_waiting")
TABLE = Job._meta.db_table


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("CREATE INDEX CONCURRENTLY is PostgreSQL's")


@pytest.fixture
def mysql() -> Iterator[None]:
    """MySQL/MariaDB only; the test leaves the app migrated to its last migration."""
    if connection.vendor != "mysql":
        pytest.skip("hidden VIRTUAL columns stand in for partial indexes on MySQL/MariaDB only")
    yield
    migrate(None)


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


def planned(operation: ReplaceIndex, *, backwards: bool = False) -> list[str]:
    """The statements ``operation`` would run on the table as it is now, collected, not run."""
    state = ProjectState.from_apps(apps)
    with connection.schema_editor(collect_sql=True, atomic=False) as editor:
        run = operation.database_backwards if backwards else operation.database_forwards
        run("django_sqlqueue", editor, state, state)
    return [statement.removesuffix(";") for statement in editor.collected_sql]


def run_without_locking(statements: list[str]) -> None:
    """Run ``statements`` each with ``LOCK=NONE``, which the server refuses (error 1846)
    for a statement that would block the table's writers."""
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement + (", LOCK=NONE" if statement.startswith("ALTER TABLE") else " LOCK=NONE"))


def mysql_indexes(*names: str) -> dict[str, list[str]]:
    """The indexes ``names`` and any under their temporary names, each with its columns."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, TABLE)
    wanted = {*names, *(f"{name}_new" for name in names)}
    return {name: constraints[name]["columns"] for name in wanted if name in constraints}


def hidden_columns() -> set[str]:
    """The table's hidden columns of the indexes that stand in for partial ones."""
    hidden = {"waiting_queue", "finished_status", "failure_status", "failure_seen_at", "unique_key_active"}
    with connection.cursor() as cursor:
        return hidden & {column.name for column in connection.introspection.get_table_description(cursor, TABLE)}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_builds_the_hidden_index_beside_the_old_one_without_blocking_writes() -> None:
    migrate("0026_batches")
    before = hidden_columns()
    statements = planned(ReplaceIndex(model_name="job", old=WAITING, new=HIDDEN_WAITING))
    assert statements == [  # the column alone, the index alone, and the old index serves until the rename
        "ALTER TABLE `django_sqlqueue_job` ADD COLUMN `waiting_queue` varchar(100) AS (CASE WHEN `status` = "
        "'WAITING' THEN `queue` END) VIRTUAL",
        "ALTER TABLE `django_sqlqueue_job` ADD INDEX `sqlqueue_job_waiting_new` (`waiting_queue`)",
        "ALTER TABLE `django_sqlqueue_job` DROP INDEX `sqlqueue_job_waiting`, "
        "RENAME INDEX `sqlqueue_job_waiting_new` TO `sqlqueue_job_waiting`",
    ]
    run_without_locking(statements)
    assert mysql_indexes("sqlqueue_job_waiting") == {"sqlqueue_job_waiting": ["waiting_queue"]}
    assert hidden_columns() == before | {"waiting_queue"}

    statements = planned(ReplaceIndex(model_name="job", old=WAITING, new=HIDDEN_WAITING), backwards=True)
    assert statements[-1] == "ALTER TABLE `django_sqlqueue_job` DROP COLUMN `waiting_queue`"
    run_without_locking(statements)
    assert mysql_indexes("sqlqueue_job_waiting") == {"sqlqueue_job_waiting": ["status", "queue"]}
    assert hidden_columns() == before


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_replaces_0029s_indexes_both_ways_without_blocking_writes() -> None:
    migrate("0028_claim_indexes_hold_expiry")
    names, before = ("sqlqueue_job_queue_status", "sqlqueue_job_finished"), hidden_columns()
    operations = import_module("django_sqlqueue.migrations.0029_finished_indexes_hidden").Migration.operations
    for operation in operations:
        run_without_locking(planned(operation))
    assert mysql_indexes(*names) == {
        "sqlqueue_job_queue_status": ["queue", "finished_status"],
        "sqlqueue_job_finished": ["finished_at", "finished_status"],
    }
    assert hidden_columns() == before | {"finished_status"}
    for operation in reversed(operations):
        run_without_locking(planned(operation, backwards=True))
    assert mysql_indexes(*names) == {
        "sqlqueue_job_queue_status": ["queue", "status"],
        "sqlqueue_job_finished": ["finished_at", "status"],
    }
    assert hidden_columns() == before


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_a_run_interrupted_after_its_column_and_before_its_rename_is_finished_by_the_next() -> None:
    migrate("0026_batches")
    with connection.cursor() as cursor:  # as a run stopped in the index's build leaves it
        cursor.execute(planned(ReplaceIndex(model_name="job", old=WAITING, new=HIDDEN_WAITING))[0])
        cursor.execute(f"ALTER TABLE {TABLE} ADD INDEX sqlqueue_job_waiting_new (queue)")
    migrate("0027_waiting_index_hidden")
    assert mysql_indexes("sqlqueue_job_waiting") == {"sqlqueue_job_waiting": ["waiting_queue"]}
    assert "waiting_queue" in hidden_columns()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_a_rollback_interrupted_before_dropping_its_column_is_finished_by_the_next() -> None:
    migrate("0027_waiting_index_hidden")
    with connection.cursor() as cursor:  # as a rollback stopped after its rename leaves it
        cursor.execute(f"ALTER TABLE {TABLE} DROP INDEX sqlqueue_job_waiting")
        cursor.execute(f"ALTER TABLE {TABLE} ADD INDEX sqlqueue_job_waiting (status, queue)")
    migrate("0026_batches")
    assert mysql_indexes("sqlqueue_job_waiting") == {"sqlqueue_job_waiting": ["status", "queue"]}
    assert "waiting_queue" not in hidden_columns()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_keeps_a_hidden_column_the_new_index_is_on() -> None:
    migrate("0029_finished_indexes_hidden")
    name = "sqlqueue_job_queue_status"
    old = HiddenFinishedIndex(fields=["queue", "status"], name=name, over=FINISHED_JOBS, adds_column=True)
    new = HiddenFinishedIndex(fields=["status", "queue"], name=name, over=FINISHED_JOBS)
    run_without_locking(planned(ReplaceIndex(model_name="job", old=old, new=new)))
    assert mysql_indexes(name) == {name: ["finished_status", "queue"]}
    assert "finished_status" in hidden_columns()
