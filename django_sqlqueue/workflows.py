"""The common shapes of a workflow, built on ``after=`` (see the Workflows guide): a
chain, each step after the one before, and a chord, a group of jobs whose results
feed one final job. Each takes jobs made by ``Job.objects.build(...)`` and writes them
all or none, in one transaction."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.db import transaction

from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.models import Job


def chain(steps: Iterable[Job]) -> list[Job]:
    """Enqueue ``steps`` (unsaved, from ``Job.objects.build``), each after the one before
    (and after whatever its own ``after`` names): the second runs once the first has
    succeeded, and so on; a step that fails for good cancels the rest (unless built
    with ``after_failure="run"``). Returns the jobs written, in order."""
    written: list[Job] = []
    with transaction.atomic(using=queue_db(Job)):
        for step in _unsaved(steps):
            if written:
                step.after = (*step.after, written[-1])
            written += Job.objects.enqueue_many([step])
    return written


def chord(group: Iterable[Job], then: Job, *, batch_size: int = 1000) -> tuple[list[Job], Job]:
    """Enqueue ``group`` (unsaved jobs, written by ``enqueue_many``) and ``then``, after
    every job of the group: ``then`` runs once they have all succeeded and reads their
    results with ``current_job().dependency_results()``. Returns the group's jobs and
    ``then``'s."""
    with transaction.atomic(using=queue_db(Job)):
        jobs = Job.objects.enqueue_many(_unsaved(group), batch_size=batch_size)
        (then,) = _unsaved([then])
        then.after = (*then.after, *jobs)
        (final,) = Job.objects.enqueue_many([then])
    return jobs, final


def _unsaved(jobs: Iterable[Job]) -> Iterator[Job]:
    """``jobs``, refusing one already written: enqueueing it again would write a copy."""
    for job in jobs:
        if job.pk is not None:
            raise InvalidJobError(f"Job {job.pk} is already enqueued: give jobs made by Job.objects.build().")
        yield job
