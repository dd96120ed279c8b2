"""django-sqlqueue: a job queue in one SQL table.

The names a task and its caller use import from here: ``job``, ``current_job``, the
exceptions a task raises (``Snooze``, ``JobCancelled``), the workflows' ``chain`` and
``chord``, and the operators' controls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django_sqlqueue.exceptions import JobCancelled, Snooze
from django_sqlqueue.rules.registry import job
from django_sqlqueue.runner.current import JobHandle, current_job

if TYPE_CHECKING:
    from django_sqlqueue.operations import await_for, cancel_jobs, pause_queue, queue_stats, resume_queue, wait_for
    from django_sqlqueue.workflows import chain, chord

__all__ = [
    "JobCancelled",
    "JobHandle",
    "Snooze",
    "await_for",
    "cancel_jobs",
    "chain",
    "chord",
    "current_job",
    "job",
    "pause_queue",
    "queue_stats",
    "resume_queue",
    "wait_for",
]

#: The operators' controls (``operations``) and the workflows (``workflows``) import
#: the models, which cannot be imported with the package (before Django's apps are
#: ready): they are imported when first asked for.
_OPERATIONS = frozenset({"await_for", "cancel_jobs", "pause_queue", "queue_stats", "resume_queue", "wait_for"})
_WORKFLOWS = frozenset({"chain", "chord"})


def __getattr__(name: str) -> Any:
    if name in _OPERATIONS:
        from django_sqlqueue import operations

        return getattr(operations, name)
    if name in _WORKFLOWS:
        from django_sqlqueue import workflows

        return getattr(workflows, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
