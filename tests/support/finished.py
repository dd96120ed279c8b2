"""Finished jobs of any age, for the pruning tests: made through the public API, then
moved back in time by the database's clock."""

from __future__ import annotations

import datetime

from django_sqlqueue.db.clock import DatabaseNowPlus
from django_sqlqueue.models import Job, JobStatus
from tests.testapp.tasks import noop


def finished_job(status: JobStatus, ago: datetime.timedelta | None) -> int:
    """The id of a new job of ``status`` that finished ``ago`` (no ``finished_at`` when None)."""
    (made,) = Job.objects.enqueue_many([Job.objects.build(noop)])
    finished_at = None if ago is None else DatabaseNowPlus(-ago)
    Job.objects.filter(pk=made.pk).update(status=status, finished_at=finished_at)
    return made.pk
