"""The operators' controls, in one place: pause and resume a queue, cancel jobs, and read
the queue's figures. A deployment script, a view of your own or a shell session imports
these; the admin's actions and the ``sqlqueue_*`` commands do the same things.

Everything here imports the models, so import it once Django's apps are ready (the
package root, ``django_sqlqueue``, exports these names lazily for that reason)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, TypeVar

from django.db import models

from django_sqlqueue.backends import SQLQueueBackend
from django_sqlqueue.backends.compat import TaskResult, TaskResultStatus
from django_sqlqueue.backends.results import job_result
from django_sqlqueue.db.pausing import pause_queue, paused_queues, resume_queue
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.db.waiting import in_thread
from django_sqlqueue.managers import CancelCount
from django_sqlqueue.models import Job
from django_sqlqueue.reporting.stats import Snapshot, snapshot

__all__ = [
    "CancelCount",
    "Snapshot",
    "await_for",
    "cancel_jobs",
    "pause_queue",
    "paused_queues",
    "queue_stats",
    "resume_queue",
    "wait_for",
]

_Waited = TypeVar("_Waited", Job, "TaskResult[Any, Any]")


def cancel_jobs(jobs: models.QuerySet[Job] | Iterable[int]) -> CancelCount:
    """Cancel ``jobs`` (a queryset or ids): ``READY`` ones at once, ``RUNNING`` ones when
    their worker learns of it. The same as ``Job.objects.cancel(jobs)``, the ORM's way."""
    return Job.objects.cancel(jobs)


def queue_stats(using: str | None = None) -> Snapshot:
    """Every queue's counts, lag, recent outcomes and pause, and every live worker, read
    on ``using`` (by default the database the queue's router picks): what
    ``manage.py sqlqueue_stats`` prints and the metrics endpoint serves."""
    return snapshot(queue_db(Job, using))


def wait_for(waited: _Waited, timeout: float | None = None) -> _Waited:
    """Wait until a job, or the ``TaskResult`` of a task enqueued on our Tasks backend,
    is finished, and refresh it: ``Job.wait`` (``Job.objects.wait`` says what a timeout,
    a transaction and a deleted row do), or for a result what its ``refresh()`` would
    read once it is ``SUCCESSFUL`` or ``FAILED`` (a cancelled job is ``FAILED`` to Django).
    Returns ``waited``; raises :class:`~django_sqlqueue.exceptions.WaitTimeout` after
    ``timeout`` seconds (None: never), and ``TypeError`` for another backend's result."""
    if isinstance(waited, Job):
        return waited.wait(timeout)
    backend = waited.task.get_backend()
    if not isinstance(backend, SQLQueueBackend):
        raise TypeError(f"{waited.backend!r} is not a SQLQueueBackend: its results cannot be waited for.")
    job = Job.objects.db_manager(backend.database).wait(int(waited.id), timeout)
    if job.finished_at is None:  # deleted by its success (SQLQUEUE_RETENTION): nothing else is known
        object.__setattr__(waited, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(waited, "_return_value", None)
        return waited
    refreshed: TaskResult[Any, Any] = job_result(job, waited.task, backend=waited.backend)
    for field in dataclasses.fields(refreshed):
        if field.name != "task":
            object.__setattr__(waited, field.name, getattr(refreshed, field.name))
    return waited


async def await_for(waited: _Waited, timeout: float | None = None) -> _Waited:
    """:func:`wait_for` for async code (an async view): run in a thread of its own, its
    connections closed after."""
    return await in_thread(wait_for)(waited, timeout)
