"""The settings the tests run with, in the test process and in every process they start:
the demo project's (``testproject.settings``) plus the tests' own apps.

- ``tests.testapp``: the ``@job`` tasks the tests enqueue and the ``Receipt`` model.
- ``tests.djtasks``: Django Tasks ``@task`` functions (Django 6.0+, or the django-tasks
  backport on Django 5.2).

The worker tests shorten the queue's clocks for the processes they start through the
environment (``tests.support.workers.FAST_CLOCKS``)."""

from __future__ import annotations

import os
from importlib.util import find_spec

import django

from testproject.settings import *  # noqa: F403
from testproject.settings import INSTALLED_APPS

INSTALLED_APPS = [
    *INSTALLED_APPS,
    "tests.testapp",
    *(["tests.djtasks"] if django.VERSION >= (6, 0) or find_spec("django_tasks") else []),
]

for _name in (
    "SQLQUEUE_RETRY_BACKOFF",
    "SQLQUEUE_RETRY_BACKOFF_MAX",
    "SQLQUEUE_HEARTBEAT_INTERVAL",
    "SQLQUEUE_LEASE",
    "SQLQUEUE_POLL_INTERVAL",
    "SQLQUEUE_SHUTDOWN_GRACE",
):
    if _name in os.environ:
        globals()[_name] = float(os.environ[_name])
