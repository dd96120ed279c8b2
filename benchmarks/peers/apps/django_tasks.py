"""django-tasks-db's no-op task, declared as Django's Tasks framework declares one."""

from __future__ import annotations

from django.tasks import task


@task
def noop() -> None:
    """Does nothing: the benchmark times the queue, not the work."""
