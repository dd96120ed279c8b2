"""Claimed jobs and the exceptions their attempts raise, for the tests of a failed
attempt: what it becomes (``rules/failures``) and how it is written (``db/finishing``)."""

from __future__ import annotations

import datetime
from typing import Any

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.models import Job
from tests.testapp.tasks import noop


def db_now() -> datetime.datetime:
    """The database's clock, read through the jobs table (which must hold a row)."""
    now = Job.objects.annotate(now=DatabaseNow()).values_list("now", flat=True).first()
    assert now is not None, "db_now() reads the clock through a row: enqueue one first"
    return now


def claim(count: int = 1, worker_id: str = "w", **options: Any) -> list[Job]:
    """Enqueue ``count`` jobs and claim them all."""
    Job.objects.enqueue_many(Job.objects.build(noop, (index,), **options) for index in range(count))
    claimed = Job.objects.claim(worker_id=worker_id, limit=count)
    assert len(claimed) == count
    return claimed


def failing_task_body(message: str) -> None:
    raise ValueError(message)


def raised(message: str) -> ValueError:
    """A real exception with a traceback through ``failing_task_body``."""
    try:
        failing_task_body(message)
    except ValueError as error:
        return error
    raise AssertionError("unreachable")
