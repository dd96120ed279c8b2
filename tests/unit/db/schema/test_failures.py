"""The failures index (``db/schema/failures.py``): on MySQL/MariaDB the hidden columns it is
made of hold a job only while it is in a failure group, and the failures page's queries
read the index alone."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.db import connection
from django.db.models import Count, Max, Min

from django_sqlqueue.admin import changes, failures
from django_sqlqueue.db.schema.failures import MYSQL_SEEN_COLUMN, MYSQL_STATUS_COLUMN, FailureSeenAt, InFailureGroup
from django_sqlqueue.models import Job, JobStatus
from tests.testapp.tasks import noop

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("mysql_server")]


def hidden(job: Job) -> tuple[Any, ...]:
    """The job's failure status and time seen failing, as the index holds them."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {quote(MYSQL_STATUS_COLUMN)}, {quote(MYSQL_SEEN_COLUMN)}, started_at, finished_at "
            f"FROM {quote(Job._meta.db_table)} WHERE id = %s",
            [job.pk],
        )
        status, seen, started, finished = cursor.fetchone()
    named = [name for name, value in (("started_at", started), ("finished_at", finished)) if value == seen]
    return status, None if seen is None else named[0]


def claimed() -> Job:
    (job,) = Job.objects.claim(worker_id="w", limit=1)
    return job


def test_a_job_is_in_the_index_only_while_its_last_attempt_failed() -> None:
    lucky, unlucky = Job.objects.enqueue(noop, max_attempts=2), Job.objects.enqueue(noop, max_attempts=2)
    assert hidden(lucky) == hidden(unlucky) == (None, None)
    first = claimed()
    assert hidden(first) == (None, None)
    Job.objects.finish(worker_id="w", succeeded={first: None})
    assert hidden(first) == (None, None)  # SUCCESSFUL

    second = claimed()
    Job.objects.finish(worker_id="w", failed={second: ValueError("once")})
    assert hidden(second) == ("READY", "started_at")  # waiting for its retry
    Job.objects.filter(pk=second.pk).update(run_at=datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc))
    again = claimed()
    assert hidden(again) == (None, None)  # RUNNING again
    Job.objects.finish(worker_id="w", failed={again: ValueError("twice")})
    assert hidden(again) == ("FAILED", "finished_at")
    Job.objects.cancel([Job.objects.enqueue(noop).pk])
    assert Job.objects.filter(status=JobStatus.CANCELLED).count() == 1
    assert hidden(Job.objects.get(status=JobStatus.CANCELLED)) == (None, None)


@pytest.mark.parametrize("status", [JobStatus.FAILED, JobStatus.READY])
def test_the_groups_and_a_groups_jobs_are_read_from_the_index(status: str) -> None:
    groups = (
        Job.objects.filter(InFailureGroup(status))
        .values("task", "last_error_class")
        .annotate(count=Count("pk"), first=Min(FailureSeenAt(status)), last=Max(FailureSeenAt(status)))
        .order_by()
    )
    change = changes.RETRY if status == JobStatus.FAILED else changes.CANCEL
    for query, only in [(groups, "Using index"), (failures.group_jobs(change, "t", "c"), "")]:
        plan = query.explain()
        assert "sqlqueue_job_failed" in plan, plan
        assert only in plan, plan
