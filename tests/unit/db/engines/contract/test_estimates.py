"""What every engine's database estimates of a table: its rows, for the admin's
paginator and the counts by queue (none on SQLite), and PostgreSQL's shares of common
values (none elsewhere)."""

from __future__ import annotations

import pytest
from django.db import connection, connections

from django_sqlqueue.db.engines import engine
from django_sqlqueue.models import Job, JobStatus
from tests.support.admin_helpers import make_job

TABLE = Job._meta.db_table


def analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {'' if connection.vendor == 'postgresql' else 'TABLE '}{TABLE}")


@pytest.mark.django_db(transaction=True)  # ANALYZE TABLE commits on MySQL
def test_the_database_estimates_the_table() -> None:
    for _ in range(3):
        make_job()
    if connection.vendor == "sqlite":
        assert engine(connections["default"]).estimated_rows(TABLE) == -1
        return
    analyze()
    assert engine(connections["default"]).estimated_rows(TABLE) == 3


@pytest.mark.django_db
def test_a_table_that_is_not_there_has_no_estimate() -> None:
    assert engine(connections["default"]).estimated_rows("sqlqueue_no_such_table") == -1


@pytest.mark.django_db
def test_only_postgresql_estimates_the_shares_of_common_values() -> None:
    for status in [JobStatus.SUCCESSFUL] * 6 + [JobStatus.FAILED] * 2:  # PostgreSQL leaves out values met once
        make_job(status, queue="mail")
    database = engine(connections["default"])
    if not database.keeps_value_shares:
        assert connection.vendor != "postgresql"
        assert database.value_shares(TABLE, ["queue", "status"]) == {}
        return
    assert database.value_shares(TABLE, ["queue", "status"]) == {}  # never analysed
    analyze()  # in the test's transaction, which rolls it back
    assert database.value_shares(TABLE, ["queue", "status"]) == {
        "queue": {"mail": 1.0},
        "status": {JobStatus.SUCCESSFUL: 0.75, JobStatus.FAILED: 0.25},
    }
