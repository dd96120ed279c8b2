"""The database's own estimates of a table (``db/estimates.py``): its rows, for the
admin's paginator and the counts by queue, and PostgreSQL's shares of common values."""

from __future__ import annotations

import pytest
from django.db import connection

from django_sqlqueue.db.estimates import estimated_rows, keeps_value_shares, value_shares
from django_sqlqueue.models import Job, JobStatus
from tests.support.admin_helpers import make_job


def analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {'' if connection.vendor == 'postgresql' else 'TABLE '}{Job._meta.db_table}")


@pytest.mark.django_db(transaction=True)  # ANALYZE TABLE commits on MySQL
def test_the_database_estimates_the_table() -> None:
    for _ in range(3):
        make_job()
    if connection.vendor == "sqlite":
        assert estimated_rows(Job.objects.all()) == -1
        return
    analyze()
    assert estimated_rows(Job.objects.all()) == 3


@pytest.mark.django_db
def test_only_postgresql_estimates_the_shares_of_common_values() -> None:
    for status in [JobStatus.SUCCESSFUL] * 6 + [JobStatus.FAILED] * 2:  # PostgreSQL leaves out values met once
        make_job(status, queue="mail")
    if not keeps_value_shares(connection.alias):
        assert connection.vendor != "postgresql"
        assert value_shares(Job.objects.all(), ["queue", "status"]) == {}
        return
    assert value_shares(Job.objects.all(), ["queue", "status"]) == {}  # never analysed
    analyze()  # in the test's transaction, which rolls it back
    assert value_shares(Job.objects.all(), ["queue", "status"]) == {
        "queue": {"mail": 1.0},
        "status": {JobStatus.SUCCESSFUL: 0.75, JobStatus.FAILED: 0.25},
    }
