"""Tasks the tests enqueue: registered at import, like any project's tasks module."""

from __future__ import annotations

from django_sqlqueue import job


@job
def noop(*args: object, **kwargs: object) -> None:
    """Does nothing: for tests about the queue, not the task."""


@job(queue="reports", priority=10, max_attempts=2, timeout=5)
def report(name: str) -> str:
    """A task whose decorator sets every default."""
    return name
