"""Real lock waits that give up, from the real database: another connection holds a
job's lock while this test's connection is told to wait for it only a moment."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator

from django.db import connection, connections

from django_sqlqueue.models import Job


@contextlib.contextmanager
def held_elsewhere(job: Job) -> Iterator[Callable[[], None]]:
    """Hold ``job``'s row lock from another connection (on SQLite, which has no row locks,
    the database's write lock) until the block ends, or until the ``release()`` it gives
    is called. ``job`` must be committed: the test must be transactional."""
    if connection.vendor == "sqlite":
        locker = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")

        def release() -> None:
            if locker.in_transaction:
                locker.execute("ROLLBACK")

        try:
            yield release
        finally:
            release()
            locker.close()
        return

    other = connections.create_connection("default")
    other.set_autocommit(False)
    table = other.ops.quote_name(Job._meta.db_table)
    # InnoDB may lock every record of a covering secondary index it scans: lock through the primary key.
    if other.vendor == "mysql":
        table += " FORCE INDEX (PRIMARY)"
    try:
        with other.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {table} WHERE id = %s FOR UPDATE", [job.pk])
            assert [row[0] for row in cursor.fetchall()] == [job.pk]
        yield other.rollback
    finally:
        other.rollback()
        other.close()


@contextlib.contextmanager
def impatient() -> Iterator[None]:
    """This test's connection gives up waiting for a lock after a moment (MySQL's least
    is a second), then waits as before."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET lock_timeout = '100ms'")
            restore = "RESET lock_timeout"
        elif connection.vendor == "mysql":
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
            restore = "SET SESSION innodb_lock_wait_timeout = DEFAULT"
        else:
            cursor.execute("PRAGMA busy_timeout")
            restore = f"PRAGMA busy_timeout = {int(cursor.fetchone()[0])}"
            cursor.execute("PRAGMA busy_timeout = 100")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(restore)
