"""Django's Tasks framework, wherever it lives: ``django.tasks`` from Django 6.0, the
``django-tasks`` backport (``django_tasks``) on Django 5.2. Everything else imports
from here, so the backend is the same code on both.

The type checker always sees ``django.tasks``: the backport mirrors its API."""

from __future__ import annotations

from typing import TYPE_CHECKING

import django
from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING or django.VERSION >= (6, 0):
    from django.tasks import Task, TaskContext, TaskResult, TaskResultStatus, task, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import TaskError
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist, TaskResultMismatch
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json
else:
    try:
        from django_tasks.base import Task, TaskContext, TaskError, TaskResult, TaskResultStatus, task
    except ImportError as error:
        raise ImproperlyConfigured(
            "Django 5.2 has no Tasks framework of its own: install the backport with "
            "pip install 'django-sqlqueue[tasks]'."
        ) from error
    from django_tasks import task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json

__all__ = [
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "normalize_json",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
