"""Transactional completion: an atomic task's writes and its job's success in one
transaction on the jobs table's database, so that they commit together or not at all.

``@job(atomic=True)`` runs the task inside ``transaction.atomic()`` and writes its
success (the ``succeed`` transition, fenced on the worker and the attempt as every
finish is) before the block ends; a task may write it sooner itself, inside a
transaction of its own, with ``current_job().complete_in_transaction()``. A fence that
fails raises :class:`~django_sqlqueue.exceptions.JobTakenAway`, which rolls the
transaction back: the attempt that holds the job now commits the task's writes, never
two. The worker then writes nothing for that job: its outcome was committed with it.

The write itself is ``current.JobHandle.complete_in_transaction``'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.transaction import TransactionManagementError

from django_sqlqueue.db.finishing import Ended
from django_sqlqueue.models import Job
from django_sqlqueue.rules.registry import atomic_elsewhere
from django_sqlqueue.runner.current import JobHandle, current_job


def run_atomically(job: Job, work: Callable[[], Any]) -> Any:
    """``work()`` (the task's call) inside a transaction on the jobs' database, ``job``'s
    success written in it unless the task wrote it itself: what ``@job(atomic=True)``
    does. What the task returned.

    Raises ``ImproperlyConfigured`` when the task said it writes to another database
    (``@job(atomic="alias")``), which this transaction would not hold."""
    handle = current_job()
    if handle is None or handle.job is not job:
        raise TransactionManagementError(f"job {job.pk} runs atomically only in a worker (or django_sqlqueue.testing).")
    using = handle.database
    if problem := atomic_elsewhere(job.task, using):
        raise ImproperlyConfigured(f"{problem}.")
    with transaction.atomic(using=using):
        value = work()
        if handle.completed_in(using) is None:
            handle.complete_in_transaction(value)
    handle.committed()
    return value


def completed(handle: JobHandle) -> Ended | None:
    """The success ``handle``'s task wrote with ``complete_in_transaction()`` if it
    stands (committed, or in a transaction of the caller's around the attempt, as a
    test's), for the worker not to write another; None when there is none, or when the
    transaction it was written in was rolled back after all."""
    return handle.completed_in(handle.database)
