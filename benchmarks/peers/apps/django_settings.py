"""One Django settings module for the Django peers (ours, django-tasks-db, django-q2):
``PEERS_APP`` names the peer's app, ``PEERS_DB`` its scratch database. As a project
would run in production: ``DEBUG`` off, ``CONN_MAX_AGE`` 0, nothing else installed."""

from __future__ import annotations

import os
from typing import Any

from apps.common import database

SECRET_KEY = "peers-benchmark-not-secret"
DEBUG = False
USE_TZ = True
ALLOWED_HOSTS: list[str] = []
_APP = os.environ["PEERS_APP"]

INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", _APP]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": database(),
        "USER": os.environ.get("PEERS_USER", "postgres"),
        "HOST": os.environ.get("PEERS_HOST", "127.0.0.1"),
        "PORT": os.environ.get("PEERS_PORT", "5432"),
    }
}
LOGGING_CONFIG = None

TASKS: dict[str, dict[str, Any]] = {}
if _APP == "django_sqlqueue":
    TASKS = {"default": {"BACKEND": "django_sqlqueue.backends.SQLQueueBackend"}}
elif _APP == "django_tasks_db":
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
elif _APP == "django_q":
    # The ORM broker as django-q2's docs configure it, with the run's W workers.
    Q_CLUSTER = {
        "name": "DjangORM",
        "workers": int(os.environ.get("PEERS_WORKERS", "2")),
        "timeout": 90,
        "retry": 120,
        "queue_limit": 50,
        "bulk": 10,
        "orm": "default",
    }
