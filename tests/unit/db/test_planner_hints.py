"""Queries written for each database's planner (``db/planner_hints.py``): the same rows,
in the same order, on every database."""

from __future__ import annotations

import pytest
from django.db import connection

from django_sqlqueue.db.planner_hints import finished_first
from django_sqlqueue.db.schema.indexes import FINISHED_JOBS
from django_sqlqueue.models import Job, JobStatus
from tests.support.admin_helpers import make_job

pytestmark = pytest.mark.django_db


def test_finished_first_narrows_to_the_finished_jobs_where_the_index_holds_only_them() -> None:
    ready, failed = make_job(), make_job(JobStatus.FAILED)
    rows = finished_first(Job.objects.get_queryset(), FINISHED_JOBS)
    expected = [failed.pk] if connection.vendor == "postgresql" else [ready.pk, failed.pk]
    assert sorted(rows.values_list("pk", flat=True)) == expected
