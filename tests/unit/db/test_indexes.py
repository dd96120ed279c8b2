"""The indexes each database builds for the jobs table (``db/indexes.py``): on
PostgreSQL the admin's indexes hold finished jobs only, and every query that read them
whole can still read them."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest
from django.db import connection
from django.db.models import Count, QuerySet

from django_sqlqueue.db import pruning, rollup
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.lifecycle import FINISHED

pytestmark = pytest.mark.django_db

HOUR = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.timezone.utc)


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the admin's indexes are partial on PostgreSQL only")


def plan(rows: QuerySet[Job]) -> str:
    """``rows``' plan, with the table's rows out of reach (a few test rows would be read
    whole rather than through an index)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        try:
            return rows.explain()
        finally:
            cursor.execute("SET LOCAL enable_seqscan = on")


@pytest.mark.usefixtures("postgresql")
@pytest.mark.parametrize(
    ("index", "rows"),
    [
        (  # the exact counts of the overview and sqlqueue_stats
            "sqlqueue_job_queue_status",
            lambda: Job.objects.filter(status__in=FINISHED).values_list("queue", "status").annotate(n=Count("*")),
        ),
        (  # the charts' hours, as rollup.tally filters them
            "sqlqueue_job_finished",
            lambda: (
                Job.objects.filter(finished_at__gte=HOUR, finished_at__lt=HOUR + rollup.HOUR, status__in=rollup.CHARTED)
                .values_list("queue")
                .annotate(n=Count("pk"))
            ),
        ),
        (  # the admin's "finished" range filter, which names no status
            "sqlqueue_job_finished",
            lambda: Job.objects.filter(finished_at__gte=HOUR, finished_at__lt=HOUR + rollup.HOUR),
        ),
        (  # pruning: its status or its finish time
            "sqlqueue_job_queue_status|sqlqueue_job_finished",
            lambda: pruning.due(Job.objects.get_queryset(), JobStatus.CANCELLED, datetime.timedelta(days=1), HOUR),
        ),
    ],
)
def test_what_read_the_admin_indexes_still_reads_them_on_postgresql(
    index: str, rows: Callable[[], QuerySet[Job]]
) -> None:
    read = plan(rows())
    assert any(name in read for name in index.split("|")), read


@pytest.mark.usefixtures("postgresql")
def test_the_admin_indexes_are_partial_but_the_enqueued_one_on_postgresql() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE '%%WHERE%%'",
            [Job._meta.db_table],
        )
        partial = {row[0] for row in cursor.fetchall()}
    assert {"sqlqueue_job_queue_status", "sqlqueue_job_finished"} <= partial
    assert "sqlqueue_job_enqueued" not in partial  # the enqueued filter reads jobs of every status
