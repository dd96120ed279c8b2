"""How every engine wakes idle workers: where the database notifies (PostgreSQL), a
``NOTIFY`` sent in a transaction reaches the workers that listen once it commits;
elsewhere nothing is sent, nobody can listen, and the wake-up folder is named for the
database (``db/wakeup.py``)."""

from __future__ import annotations

import os

import pytest
from django.db import connection, connections, transaction

from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.engines.mysql import MySQL
from django_sqlqueue.db.engines.postgresql import PostgreSQL
from django_sqlqueue.db.engines.sqlite import SQLite
from django_sqlqueue.models import Job
from tests.testapp.tasks import add


def test_only_postgresql_notifies() -> None:
    assert engine(connections["default"]).notifies == (connection.vendor == "postgresql")
    assert (PostgreSQL.notifies, MySQL.notifies, SQLite.notifies) == (True, False, False)


@pytest.mark.django_db(transaction=True)
def test_a_notification_arrives_when_its_transaction_commits_and_only_then() -> None:
    database = engine(connections["default"])
    if not database.notifies:
        database.notify("nobody hears this")  # sends nothing, raises nothing
        with pytest.raises(NotImplementedError):
            database.listening_connection()
        return
    listener = database.listening_connection()
    try:
        with transaction.atomic():
            database.notify("rolled back")
            transaction.set_rollback(True)
        with transaction.atomic():
            database.notify("committed")
            heard = [notify.payload for notify in listener.connection.notifies(timeout=0.2)]
            assert heard == []  # not before the commit
        heard = [notify.payload for notify in listener.connection.notifies(timeout=1.0, stop_after=1)]
        assert heard == ["committed"]
    finally:
        listener.close()


def test_the_wakeup_identity_names_the_database_by_its_server_and_name() -> None:
    database = engine(connections["default"])
    identity = database.wakeup_identity()
    settings = connection.settings_dict
    if connection.vendor == "sqlite" and connection.is_in_memory_db():  # type: ignore[attr-defined]
        assert identity is None
        return
    name = os.path.realpath(settings["NAME"]) if connection.vendor == "sqlite" else settings["NAME"]
    assert identity == "\0".join((connection.vendor, str(settings["HOST"]), str(settings["PORT"]), str(name)))
    assert identity != database.identity(f"{name}-other")


@pytest.mark.django_db(transaction=True)
def test_finished_jobs_are_told_on_a_channel_of_their_own() -> None:
    """What ``notify_finished`` sends reaches the waiters that listen for finishes, in one
    statement; never the idle workers."""
    database = engine(connections["default"])
    if not database.notifies:
        database.notify_finished(["1 2"])  # sends nothing, raises nothing
        with pytest.raises(NotImplementedError):
            database.listening_connection(finishes=True)
        return
    waiter, worker = database.listening_connection(finishes=True), database.listening_connection()
    try:
        database.notify_finished(["1 2", "3"])
        database.notify("work")
        heard = [notify.payload for notify in waiter.connection.notifies(timeout=1.0, stop_after=2)]
        assert heard == ["1 2", "3"]
        assert [notify.payload for notify in worker.connection.notifies(timeout=1.0, stop_after=1)] == ["work"]
    finally:
        waiter.close()
        worker.close()


@pytest.mark.django_db(transaction=True)
def test_an_announcing_update_counts_its_rows_and_names_the_finished_ones() -> None:
    """The finish's own ``UPDATE`` tells the waiters (no statement, no commit more), its
    row count as before; only where the database notifies."""
    database = engine(connections["default"])
    table, pk, status = (connection.ops.quote_name(name) for name in ("django_sqlqueue_job", "id", "status"))
    announcing = database.announcing_update(
        f"UPDATE {table} SET {status} = CASE WHEN {pk} = %s THEN 'FAILED' ELSE 'READY' END WHERE {pk} IN (%s, %s)",
        pk,
        status,
        ["SUCCESSFUL", "FAILED", "CANCELLED"],
    )
    if not database.notifies:
        assert announcing is None
        return
    assert announcing is not None
    finished, retried = Job.objects.enqueue(add, (1, 2)), Job.objects.enqueue(add, (3, 4))
    waiter = database.listening_connection(finishes=True)
    try:
        with connection.cursor() as cursor:
            cursor.execute(announcing, [finished.pk, finished.pk, retried.pk])
            assert cursor.rowcount == 2
        heard = [notify.payload for notify in waiter.connection.notifies(timeout=1.0, stop_after=1)]
        assert heard == [str(finished.pk)]
        assert list(waiter.connection.notifies(timeout=0.1)) == []
    finally:
        waiter.close()
