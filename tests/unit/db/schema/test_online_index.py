"""Remaking an index online (``online_index.ReplaceIndex``): on PostgreSQL concurrently,
never inside a transaction; on MySQL/MariaDB beside the old one, each statement one the
server runs without blocking writes; on both again after an interrupted run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.apps import apps
from django.db import connection, models, transaction
from django.db.migrations.state import ProjectState

from django_sqlqueue.db.schema.indexes import (
    FINISHED_JOBS,
    FinishedIndex,
    HiddenFinishedIndex,
    HiddenStatusIndex,
    StatusIndex,
)
from django_sqlqueue.db.schema.online_index import ReplaceIndex
from django_sqlqueue.models import Job
from tests.support.migrating import migrate

OLD = models.Index(fields=["finished_at", "status"], name="sqlqueue_job_finished")
NEW = models.Index(fields=["finished_at"], name="sqlqueue_job_finished")
#: The index ``OLD`` is on PostgreSQL now: partial, over finished jobs.
FINISHED = FinishedIndex(
    fields=["finished_at", "status"], name="sqlqueue_job_finished", over=models.Q(finished_at__isnull=False)
)
#: The waiting jobs' index on MySQL/MariaDB: ``(status, queue)``, then a hidden column's index.
WAITING = StatusIndex(status="WAITING", fields=["queue"], name="sqlqueue_job_waiting")
HIDDEN_WAITING = HiddenStatusIndex(status="WAITING", field="queue", name="sqlqueue_job_waiting")
TABLE = Job._meta.db_table


def remigrate() -> None:
    """The tables built again by the migrations, as the next test expects them."""
    migrate("zero")
    migrate(None)


@pytest.fixture
def postgresql() -> Iterator[None]:
    """PostgreSQL only; the test's tables are built again afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("CREATE INDEX CONCURRENTLY is PostgreSQL's")
    yield
    remigrate()


@pytest.fixture
def mysql() -> Iterator[None]:
    """MySQL/MariaDB only; the test's tables are built again afterwards."""
    if connection.vendor != "mysql":
        pytest.skip("hidden VIRTUAL columns stand in for partial indexes on MySQL/MariaDB only")
    yield
    remigrate()


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
    with connection.cursor() as cursor:  # as a run stopped before its rename leaves it
        cursor.execute("DROP INDEX sqlqueue_job_finished")
        cursor.execute("CREATE INDEX sqlqueue_job_finished_new ON django_sqlqueue_job (finished_at)")
    run(ReplaceIndex(model_name="job", old=OLD, new=FINISHED))
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


def run(operation: ReplaceIndex, *, backwards: bool = False) -> None:
    """Run ``operation`` on the table as it is now, outside a transaction, as a migration
    with ``atomic = False`` does."""
    state = ProjectState.from_apps(apps)
    with connection.schema_editor(atomic=False) as editor:
        forwards_or_backwards = operation.database_backwards if backwards else operation.database_forwards
        forwards_or_backwards("django_sqlqueue", editor, state, state)


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


#: The admin's indexes on MySQL/MariaDB: ``(queue, status)`` and ``(finished_at, status)``, then on
#: a hidden column of the finished jobs' status in place of ``status``.
FINISHED_INDEXES = [
    ReplaceIndex(
        model_name="job",
        old=FinishedIndex(fields=["queue", "status"], name="sqlqueue_job_queue_status", over=FINISHED_JOBS),
        new=HiddenFinishedIndex(
            fields=["queue", "status"], name="sqlqueue_job_queue_status", over=FINISHED_JOBS, adds_column=True
        ),
    ),
    ReplaceIndex(
        model_name="job",
        old=FINISHED,
        new=HiddenFinishedIndex(
            fields=["finished_at", "status"], name="sqlqueue_job_finished", over=models.Q(finished_at__isnull=False)
        ),
    ),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_builds_the_hidden_index_beside_the_old_one_without_blocking_writes() -> None:
    after = hidden_columns()
    statements = planned(ReplaceIndex(model_name="job", old=WAITING, new=HIDDEN_WAITING), backwards=True)
    assert statements[-1] == "ALTER TABLE `django_sqlqueue_job` DROP COLUMN `waiting_queue`"
    run_without_locking(statements)
    assert mysql_indexes("sqlqueue_job_waiting") == {"sqlqueue_job_waiting": ["status", "queue"]}
    assert hidden_columns() == after - {"waiting_queue"}

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
    assert hidden_columns() == after


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_replaces_the_finished_indexes_both_ways_without_blocking_writes() -> None:
    names, after = ("sqlqueue_job_queue_status", "sqlqueue_job_finished"), hidden_columns()
    for operation in reversed(FINISHED_INDEXES):
        run_without_locking(planned(operation, backwards=True))
    assert mysql_indexes(*names) == {
        "sqlqueue_job_queue_status": ["queue", "status"],
        "sqlqueue_job_finished": ["finished_at", "status"],
    }
    assert hidden_columns() == after - {"finished_status"}
    for operation in FINISHED_INDEXES:
        run_without_locking(planned(operation))
    assert mysql_indexes(*names) == {
        "sqlqueue_job_queue_status": ["queue", "finished_status"],
        "sqlqueue_job_finished": ["finished_at", "finished_status"],
    }
    assert hidden_columns() == after


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_a_run_interrupted_after_its_column_and_before_its_rename_is_finished_by_the_next() -> None:
    operation = ReplaceIndex(model_name="job", old=WAITING, new=HIDDEN_WAITING)
    run(operation, backwards=True)
    with connection.cursor() as cursor:  # as a run stopped in the index's build leaves it
        cursor.execute(planned(operation)[0])
        cursor.execute(f"ALTER TABLE {TABLE} ADD INDEX sqlqueue_job_waiting_new (queue)")
    run(operation)
    assert mysql_indexes("sqlqueue_job_waiting") == {"sqlqueue_job_waiting": ["waiting_queue"]}
    assert "waiting_queue" in hidden_columns()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_a_rollback_interrupted_before_dropping_its_column_is_finished_by_the_next() -> None:
    with connection.cursor() as cursor:  # as a rollback stopped after its rename leaves it
        cursor.execute(f"ALTER TABLE {TABLE} DROP INDEX sqlqueue_job_waiting")
        cursor.execute(f"ALTER TABLE {TABLE} ADD INDEX sqlqueue_job_waiting (status, queue)")
    run(ReplaceIndex(model_name="job", old=WAITING, new=HIDDEN_WAITING), backwards=True)
    assert mysql_indexes("sqlqueue_job_waiting") == {"sqlqueue_job_waiting": ["status", "queue"]}
    assert "waiting_queue" not in hidden_columns()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("mysql")
def test_mysql_keeps_a_hidden_column_the_new_index_is_on() -> None:
    name = "sqlqueue_job_queue_status"
    old = HiddenFinishedIndex(fields=["queue", "status"], name=name, over=FINISHED_JOBS, adds_column=True)
    new = HiddenFinishedIndex(fields=["status", "queue"], name=name, over=FINISHED_JOBS)
    run_without_locking(planned(ReplaceIndex(model_name="job", old=old, new=new)))
    assert mysql_indexes(name) == {name: ["finished_status", "queue"]}
    assert "finished_status" in hidden_columns()
