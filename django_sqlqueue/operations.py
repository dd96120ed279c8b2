"""The operators' controls, in one place: pause and resume a queue, cancel jobs, and read
the queue's figures. A deployment script, a view of your own or a shell session imports
these; the admin's actions and the ``sqlqueue_*`` commands do the same things.

Everything here imports the models, so import it once Django's apps are ready (the
package root, ``django_sqlqueue``, exports these names lazily for that reason)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import models

from django_sqlqueue.db.pausing import pause_queue, paused_queues, resume_queue
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.managers import CancelCount
from django_sqlqueue.models import Job
from django_sqlqueue.reporting.stats import Snapshot, snapshot

__all__ = ["CancelCount", "Snapshot", "cancel_jobs", "pause_queue", "paused_queues", "queue_stats", "resume_queue"]


def cancel_jobs(jobs: models.QuerySet[Job] | Iterable[int]) -> CancelCount:
    """Cancel ``jobs`` (a queryset or ids): ``READY`` ones at once, ``RUNNING`` ones when
    their worker learns of it. The same as ``Job.objects.cancel(jobs)``, the ORM's way."""
    return Job.objects.cancel(jobs)


def queue_stats(using: str | None = None) -> Snapshot:
    """Every queue's counts, lag, recent outcomes and pause, and every live worker, read
    on ``using`` (by default the database the queue's router picks): what
    ``manage.py sqlqueue_stats`` prints and the metrics endpoint serves."""
    return snapshot(queue_db(Job, using))
