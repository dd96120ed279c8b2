"""The same project moved to django-sqlqueue: only ``TASKS`` changed. ``max_attempts`` 1
keeps django-tasks-db's behaviour of never retrying a task that raised."""

from __future__ import annotations

from tests.settings import *  # noqa: F403

TASKS = {
    "default": {
        "BACKEND": "django_sqlqueue.backends.SQLQueueBackend",
        "QUEUES": ["default", "reports"],
        "OPTIONS": {"max_attempts": 1},
    }
}
