"""The Django peers (ours, django-tasks-db, django-q2), told apart by ``PEERS_APP``
(``django_sqlqueue``, ``django_tasks_db``, ``django_q``): ``setup`` migrates the scratch
database as ``manage.py migrate`` does; each enqueue is the peer's documented call."""

from __future__ import annotations

import os
from collections.abc import Callable

import django
from django.core.management import call_command

from apps.common import timed


def noop() -> None:
    """django-q2's task: a plain function, named by its dotted path."""


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "apps.django_settings")
    django.setup()


def setup() -> None:
    _django()
    call_command("migrate", verbosity=0)


def _enqueue_one() -> Callable[[], object]:
    app = os.environ["PEERS_APP"]
    if app == "django_sqlqueue":
        from django_sqlqueue.models import Job
        from django_sqlqueue.tasks import noop as sqlqueue_noop

        return lambda: Job.objects.enqueue(sqlqueue_noop)
    if app == "django_tasks_db":
        from apps.django_tasks import noop as task

        return task.enqueue
    from django_q.tasks import async_task

    return lambda: async_task("apps.django_peer.noop")


def enqueue(count: int) -> float:
    _django()
    return timed(_enqueue_one(), count)
