"""Exceptions raised at the queue's boundaries."""

from __future__ import annotations

import datetime

from django.db import DatabaseError
from django.db.models import Model


class SQLQueueError(Exception):
    """Base class of every error django-sqlqueue raises on purpose."""


class UnknownTaskError(SQLQueueError, LookupError):
    """A task name or function that was never registered with ``@job``."""


class InvalidJobError(SQLQueueError, ValueError):
    """A job that cannot be enqueued as given: nothing was written."""


class JobTimeout(SQLQueueError):
    """Recorded on an attempt that ran past its timeout: its worker process was stopped."""


class JobCancelled(SQLQueueError):
    """Raised by ``current_job().raise_if_cancelled()`` once someone asked to cancel the
    running job, and recorded on an attempt stopped for a cancel: the job ends
    ``CANCELLED``, never retried. A task that catches it and goes on is stopped after
    ``SQLQUEUE_CANCEL_GRACE`` all the same."""


class Snooze(SQLQueueError):
    """Raise it from a task (or call ``current_job().snooze(delay)``) to run the job
    again ``delay`` later (a ``timedelta`` or seconds, from 0 to 10 years) by the
    database's clock, its attempt not counted: the job goes back to ``READY``, its
    ``snoozes`` counted, and no error is recorded, so neither its attempts nor the
    backoff of a later failure grow.

    A job that snoozes more than its task's ``max_snoozes`` (``@job(max_snoozes=...)``,
    else ``SQLQUEUE_MAX_SNOOZES``) is ``FAILED`` with :class:`~django_sqlqueue.exceptions.SnoozedTooOften`; one that
    someone asked to cancel is ``CANCELLED``."""

    def __init__(self, delay: datetime.timedelta | float = 0) -> None:
        super().__init__(f"snoozed for {delay}" if isinstance(delay, datetime.timedelta) else f"snoozed for {delay} s")
        #: Checked as the attempt ends: one out of range fails the attempt with ``InvalidJobError``.
        self.delay = delay


class SnoozedTooOften(SQLQueueError):
    """Recorded on the attempt that snoozed once more than its task's ``max_snoozes``:
    the job is ``FAILED`` (an admin Retry gives it a fresh budget of snoozes)."""


class TransactionLeftOpen(SQLQueueError):
    """Recorded on an attempt whose task returned with autocommit off on a connection
    (``set_autocommit(False)`` not undone): what it wrote since its last ``commit()`` was
    rolled back, so the attempt fails and is retried, rather than the job succeeding
    with its writes lost."""


class WorkerLost(SQLQueueError):
    """Recorded on an attempt whose worker died or vanished before it finished."""


class TaskModuleError(SQLQueueError):
    """An installed app's ``tasks`` module raised when it was imported: no worker could
    run its tasks, so ``runworkers`` refuses to start."""


class TablesNotMigrated(SQLQueueError, DatabaseError):
    """An enqueue found the queue's tables missing from its database, or older than the
    app's migrations make them: its message says to run ``migrate``. A ``DatabaseError``,
    as the database's own error it replaces (its cause) was."""


class UniqueJobExists(SQLQueueError):
    """Raised by ``enqueue(..., on_conflict="raise")`` (and ``enqueue_many``) when an
    active job already holds a new job's ``unique_key``: nothing was written.
    ``job`` is the job that holds it."""

    def __init__(self, message: str, job: Model) -> None:
        super().__init__(message)
        self.job = job


class DependencyFailed(SQLQueueError):
    """Recorded on a job cancelled without running because a job it was enqueued
    ``after`` failed, was cancelled or was deleted (unless it has ``after_failure="run"``):
    its message names that job."""


class JobTakenAway(SQLQueueError):
    """Raised where an atomic task's success is written (``@job(atomic=True)``, or
    ``current_job().complete_in_transaction()``) when the job is no longer this attempt's:
    its lease ran out and it was rescued, to run again. The transaction it was raised in
    is rolled back, the task's writes with it, so that only the attempt that holds the
    job commits them."""


class WaitTimeout(SQLQueueError, TimeoutError):
    """Raised by ``Job.wait()`` (and ``wait_for()``) when the job has not finished within
    its timeout; the job, as last read, is :attr:`job`."""

    def __init__(self, job: Model, timeout: float | None) -> None:
        super().__init__(f"Job {job.pk} did not finish within {timeout} s (it is {getattr(job, 'status', '?')}).")
        #: The job as last read, unfinished.
        self.job = job
