"""System checks: misconfiguration is reported when Django starts, with a hint that
says how to fix it. Ids are stable and never reused; the README lists them.

Imported by ``AppConfig.ready()``, once the models are loaded."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.conf import conf
from django_sqlqueue.db.vendors import (
    CLAIM_PROBLEM_HINTS,
    DRIVER_PROBLEM_HINTS,
    claim_problem,
    driver_problem,
    version_problem,
)
from django_sqlqueue.models import Job

_SETTING_IDS = {
    "SQLQUEUE_QUEUES": "sqlqueue.E001",
    "SQLQUEUE_DEFAULT_QUEUE": "sqlqueue.E002",
    "SQLQUEUE_MAX_ATTEMPTS": "sqlqueue.E003",
    "SQLQUEUE_TIMEOUT": "sqlqueue.E004",
    "SQLQUEUE_RETRY_BACKOFF": "sqlqueue.E005",
    "SQLQUEUE_RETRY_BACKOFF_MAX": "sqlqueue.E006",
    "SQLQUEUE_BATCH_SIZE": "sqlqueue.E007",
    "SQLQUEUE_HEARTBEAT_INTERVAL": "sqlqueue.E012",
    "SQLQUEUE_LEASE": "sqlqueue.E013",
    "SQLQUEUE_POLL_INTERVAL": "sqlqueue.E014",
    "SQLQUEUE_SHUTDOWN_GRACE": "sqlqueue.E015",
    "SQLQUEUE_RETENTION": "sqlqueue.E017",
    "SQLQUEUE_CANCEL_GRACE": "sqlqueue.E026",
}


def register() -> None:
    """Called from ``AppConfig.ready()``."""
    checks.register(check_settings)
    checks.register(check_database_settings)
    checks.register(check_database_drivers)
    checks.register(check_database_version, checks.Tags.database)


def check_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    """Every ``SQLQUEUE_*`` setting holds a value the queue can use."""
    errors: list[checks.CheckMessage] = []
    for name, check_id in _SETTING_IDS.items():
        try:
            getattr(conf, name)
        except ImproperlyConfigured as error:
            # A setting that reads another one fails with that one's message: say it once.
            if all(str(error) != reported.msg for reported in errors):
                errors.append(
                    checks.Error(str(error), hint="See the settings table in django-sqlqueue's README.", id=check_id)
                )
    return errors


def _queue_connections(aliases: Iterable[str]) -> list[BaseDatabaseWrapper]:
    return [connections[alias] for alias in aliases if router.allow_migrate_model(alias, Job)]


def check_database_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    """The databases that may hold the jobs table are configured for safe concurrent claims.

    Reads settings only, so it runs with every command, not just ``migrate``."""
    return [
        checks.Error(f"{problem}.", hint=CLAIM_PROBLEM_HINTS[connection.vendor], id="sqlqueue.E010")
        for connection in _queue_connections(connections)
        if (problem := claim_problem(connection))
    ]


def check_database_drivers(**kwargs: Any) -> list[checks.CheckMessage]:
    """The databases that may hold the jobs table are reached through a driver the queue can use.

    Asks the installed driver, not the server, so it runs with every command."""
    return [
        checks.Error(f"{problem}.", hint=DRIVER_PROBLEM_HINTS[connection.vendor], id="sqlqueue.E016")
        for connection in _queue_connections(connections)
        if (problem := driver_problem(connection))
    ]


def check_database_version(databases: Sequence[str] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The database servers that hold the jobs table can lock rows with SKIP LOCKED."""
    return [
        checks.Error(f"{problem}.", hint="Upgrade the database server.", id="sqlqueue.E011")
        for connection in _queue_connections(databases or ())
        if (problem := version_problem(connection))
    ]
