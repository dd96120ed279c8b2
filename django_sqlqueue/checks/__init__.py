"""System checks: misconfiguration is reported when Django starts, with a hint that
says how to fix it. Each id, its level and its hint are ``checks.ids``'s.

Imported by ``AppConfig.ready()``, once the models are loaded."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Sequence
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections, router
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.checks import ids as check_ids
from django_sqlqueue.conf import conf, setting_names
from django_sqlqueue.db import recurrence
from django_sqlqueue.db.engines import engine, supports
from django_sqlqueue.db.engines.base import Engine
from django_sqlqueue.db.migrated import tables_problem
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.exceptions import TaskModuleError
from django_sqlqueue.metrics import client_installed
from django_sqlqueue.models import Job
from django_sqlqueue.rules.recurrence import cronsim_installed
from django_sqlqueue.rules.registry import registered_tasks


def register() -> None:
    """Called from ``AppConfig.ready()``."""
    checks.register(check_settings)
    checks.register(check_unknown_settings)
    checks.register(check_database_settings)
    checks.register(check_database_drivers)
    checks.register(check_database_version, checks.Tags.database)
    checks.register(check_database_migrated, checks.Tags.database)
    checks.register(check_database_journal, checks.Tags.database)
    checks.register(check_database_vacuum, checks.Tags.database)
    checks.register(check_database_charsets, checks.Tags.database)
    checks.register(check_schedule)
    checks.register(check_metrics_directory)
    checks.register(check_rate_limit_names)
    checks.register(check_jobs_database)
    checks.register(check_admin_apps)


def check_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    """Every ``SQLQUEUE_*`` setting holds a value the queue can use."""
    errors: list[checks.CheckMessage] = []
    for name, check_id in check_ids.SETTING_CHECKS.items():
        try:
            getattr(conf, name)
        except ImproperlyConfigured as error:
            # A setting that reads another one fails with that one's message: say it once.
            if all(str(error) != reported.msg for reported in errors):
                errors.append(check_id.message(str(error)))
    return errors


def check_unknown_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    """Every ``SQLQUEUE_*`` name in the settings is one the app reads: a misspelled one
    would be ignored without a word, and the default of the setting meant used."""
    known = setting_names()
    return [
        check_ids.UNKNOWN_SETTING.message(
            f"{name} is not a setting of django-sqlqueue, so it is ignored.", _did_you_mean(name, known)
        )
        for name in dir(settings)
        if name.startswith(_PREFIX) and name not in known
    ]


_PREFIX = "SQLQUEUE_"


def _did_you_mean(name: str, known: list[str]) -> str | None:
    """A hint naming the setting in ``known`` closest to ``name``, if one is close: the
    names are compared without the prefix they share, which would make any two alike."""
    found = difflib.get_close_matches(name.removeprefix(_PREFIX), [other.removeprefix(_PREFIX) for other in known], n=1)
    return f"Did you mean {_PREFIX}{found[0]}?" if found else None


def _queue_connections(aliases: Iterable[str]) -> list[BaseDatabaseWrapper]:
    return [connections[alias] for alias in aliases if router.allow_migrate_model(alias, Job)]


def _queue_engines(aliases: Iterable[str]) -> list[Engine]:
    """The engines of the databases that may hold the jobs table, among ``aliases``."""
    return [engine(connection) for connection in _queue_connections(aliases) if supports(connection)]


def check_database_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    """The databases that may hold the jobs table are configured for safe concurrent claims.

    Reads settings only, so it runs with every command, not just ``migrate``."""
    return [
        check_ids.CLAIMS.message(f"{problem}.", queue_engine.claim_hint)
        for queue_engine in _queue_engines(connections)
        if (problem := queue_engine.claim_problem())
    ]


def check_database_drivers(**kwargs: Any) -> list[checks.CheckMessage]:
    """The databases that may hold the jobs table are reached through a driver the queue can use.

    Asks the installed driver, not the server, so it runs with every command."""
    return [
        check_ids.DRIVER.message(f"{problem}.", queue_engine.driver_hint)
        for queue_engine in _queue_engines(connections)
        if (problem := queue_engine.driver_problem())
    ]


def check_database_version(databases: Sequence[str] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The database servers that hold the jobs table can lock rows with SKIP LOCKED."""
    return [
        check_ids.VERSION.message(f"{problem}.")
        for queue_engine in _queue_engines(databases or ())
        if (problem := queue_engine.version_problem())
    ]


def check_database_migrated(databases: Sequence[str] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The database that holds the jobs, when asked about (``check --database default``),
    has the queue's tables, current: said before an enqueue or a worker fails on them."""
    if queue_db(Job) not in (databases or ()):
        return []
    problem = tables_problem()
    return [check_ids.MIGRATED.message(problem)] if problem else []


def check_database_journal(databases: Sequence[str] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The SQLite databases that hold the jobs table are in WAL mode: a warning, since the
    queue works without it, only several times slower."""
    return [
        check_ids.JOURNAL.message(f"{problem}.")
        for queue_engine in _queue_engines(databases or ())
        if (problem := queue_engine.journal_problem())
    ]


def check_database_vacuum(databases: Sequence[str] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Autovacuum cleans the jobs table of the PostgreSQL databases that hold it: a
    warning, since the queue works without it, slower with every job."""
    return [
        check_ids.VACUUM.message(f"{problem}.")
        for queue_engine in _queue_engines(databases or ())
        if (problem := queue_engine.vacuum_problem(Job._meta.db_table))
    ]


def check_database_charsets(databases: Sequence[str] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The MySQL/MariaDB databases that hold the jobs table store every queue name and
    key as given: the queue's tables (W003) and the connection (W004) are in utf8mb4,
    and strict mode refuses what they cannot store rather than change it (W005).
    Warnings: ``enqueue`` refuses what would not be stored, so nothing is lost."""
    tables = [model._meta.db_table for model in apps.get_app_config("django_sqlqueue").get_models()]
    return [
        check_id.message(f"{problem}.")
        for queue_engine in _queue_engines(databases or ())
        for check_id, problem in (
            (check_ids.TABLES_CHARSET, queue_engine.tables_charset_problem(tables)),
            (check_ids.CONNECTION_CHARSET, queue_engine.connection_charset_problem()),
            (check_ids.STRICT_MODE, queue_engine.strict_mode_problem()),
        )
        if problem
    ]


def check_schedule(**kwargs: Any) -> list[checks.CheckMessage]:
    """Every ``SQLQUEUE_SCHEDULE`` entry can be enqueued: its task is registered and its
    arguments and options are a job's (E019), and its arguments fit the task's function
    (E037: else every tick would be refused); cron entries have cronsim (E020). The
    entries' shape is ``check_settings``'s (E018)."""
    try:
        entries = conf.SQLQUEUE_SCHEDULE
    except ImproperlyConfigured:
        return []  # check_settings reports it
    errors: list[checks.CheckMessage] = []
    for key, entry in entries.items():
        if refused := recurrence.refusal(entry):
            check_id = check_ids.SCHEDULE_ARGUMENTS if refused.arguments else check_ids.SCHEDULE_ENTRY
            errors.append(
                check_id.message(f"SQLQUEUE_SCHEDULE[{key!r}] cannot enqueue {entry.task!r}: {refused.problem}")
            )
    if not cronsim_installed() and (crons := [key for key, entry in entries.items() if entry.cron is not None]):
        errors.append(
            check_ids.SCHEDULE_CRON.message(
                f"SQLQUEUE_SCHEDULE entries {crons} use cron, which needs cronsim, and it is not installed."
            )
        )
    return errors


def check_metrics_directory(**kwargs: Any) -> list[checks.CheckMessage]:
    """With prometheus-client installed, ``PROMETHEUS_MULTIPROC_DIR``, when set, is a
    directory this process can write: the worker processes record their metrics there,
    and a scrape reads it (a missing one fails every job's receiver and every scrape)."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path is None or not client_installed() or (os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)):
        return []
    return [
        check_ids.METRICS_DIRECTORY.message(
            f"PROMETHEUS_MULTIPROC_DIR is {path!r}, which is not a directory this process can write."
        )
    ]


def check_rate_limit_names(**kwargs: Any) -> list[checks.CheckMessage]:
    """Every ``@job(rate_limit=…)`` names a limit of ``SQLQUEUE_RATE_LIMITS``: a task
    whose limit is missing would run without one."""
    try:
        limits = conf.SQLQUEUE_RATE_LIMITS
        tasks = registered_tasks()
    except ImproperlyConfigured:
        return []  # check_settings reports it
    except TaskModuleError:
        return []  # a tasks module that fails to import: runworkers says so, in one line
    return [
        check_ids.RATE_LIMIT_NAME.message(
            f"Task {task.name!r} has rate_limit={task.rate_limit!r}, which SQLQUEUE_RATE_LIMITS does not define.",
            f"Add {task.rate_limit!r} to SQLQUEUE_RATE_LIMITS (e.g. {{{task.rate_limit!r}: '25/s'}}), or "
            f"name one of {sorted(limits)}.",
        )
        for task in tasks
        if task.rate_limit is not None and task.rate_limit not in limits
    ]


def check_jobs_database(**kwargs: Any) -> list[checks.CheckMessage]:
    """The jobs table is written on ``default``: a transaction is one database's, so
    ``transaction.atomic()``, which is ``default``'s, does not cover an ``enqueue`` that
    a router sends elsewhere, and the job commits even when the rest rolls back."""
    alias = queue_db(Job)
    if alias == DEFAULT_DB_ALIAS:
        return []
    return [
        check_ids.JOBS_DATABASE.message(
            f"DATABASE_ROUTERS send the jobs table's writes to the database {alias!r}, not {DEFAULT_DB_ALIAS!r}: "
            "transaction.atomic() does not cover enqueue(), so a job stays enqueued when the rest of "
            "that transaction rolls back.",
            f"Enqueue inside transaction.atomic(using={alias!r}), which commits apart from "
            f"{DEFAULT_DB_ALIAS!r} (no transaction spans two databases), or route the jobs table to "
            f"{DEFAULT_DB_ALIAS!r}. Silence sqlqueue.W006 if that is what you want.",
        )
    ]


def check_admin_apps(**kwargs: Any) -> list[checks.CheckMessage]:
    """With Django's admin installed, ``rangefilter`` is installed too: the job list's date
    filters render its templates, and without it that page fails with
    ``TemplateDoesNotExist`` (a 500) instead of a message at start-up."""
    if not apps.is_installed("django.contrib.admin") or apps.is_installed("rangefilter"):
        return []
    return [
        check_ids.RANGEFILTER.message(
            "The jobs' admin needs 'rangefilter' (django-admin-rangefilter) in INSTALLED_APPS: the job list's "
            "date filters render its templates."
        )
    ]
