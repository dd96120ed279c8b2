"""The jobs table (``db/schema/table.py``): its status check refuses what is not a status, and
is worded as ORs of equalities (``any_of``), which SQLite evaluates without the
temporary table it builds on every claimed and finished row for an ``IN`` of more than
two values."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import JobStatus
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db


def refuses_a_bad_status(job: Job) -> bool:
    try:
        with transaction.atomic():
            Job.objects.filter(pk=job.pk).update(status="LOST")
    except IntegrityError:
        return True
    return False


def test_the_status_check_refuses_what_is_not_a_status() -> None:
    job = Job.objects.enqueue(noop)
    assert refuses_a_bad_status(job)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)  # each status passes


def test_sqlites_status_check_has_no_in() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's wording")
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [Job._meta.db_table])
        (table,) = cursor.fetchone()
    assert '"status" IN (' not in table
    assert " OR ".join(f"\"status\" = '{status}'" for status in JobStatus.values) in table
