"""django-sqlqueue: a job queue in one SQL table."""

from __future__ import annotations

from django_sqlqueue.current import JobHandle, current_job
from django_sqlqueue.rules.registry import job

__all__ = ["JobHandle", "current_job", "job", "pause_queue", "resume_queue"]


# The operator controls import the models, which cannot be imported with the package
# (before Django's apps are ready): each imports them when called.


def pause_queue(name: str, reason: str = "") -> bool:
    """Stop workers claiming from queue ``name`` within a second; True if it was not
    paused already. See ``django_sqlqueue.pausing``."""
    from django_sqlqueue import pausing

    return pausing.pause_queue(name, reason)


def resume_queue(name: str) -> bool:
    """Let workers claim from queue ``name`` again; True if it was paused."""
    from django_sqlqueue import pausing

    return pausing.resume_queue(name)
