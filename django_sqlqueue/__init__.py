"""django-sqlqueue: a job queue in one SQL table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django_sqlqueue.current import JobHandle, current_job
from django_sqlqueue.rules.registry import job

if TYPE_CHECKING:
    from django_sqlqueue.operations import cancel_jobs, pause_queue, queue_stats, resume_queue

__all__ = ["JobHandle", "cancel_jobs", "current_job", "job", "pause_queue", "queue_stats", "resume_queue"]

#: The operators' controls (``django_sqlqueue.operations``) import the models, which
#: cannot be imported with the package (before Django's apps are ready): they are
#: imported when first asked for.
_OPERATIONS = frozenset({"cancel_jobs", "pause_queue", "queue_stats", "resume_queue"})


def __getattr__(name: str) -> Any:
    if name in _OPERATIONS:
        from django_sqlqueue import operations

        return getattr(operations, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
