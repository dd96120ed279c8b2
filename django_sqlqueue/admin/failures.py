"""Failures grouped: the jobs whose last attempt failed, by task and by the exception
class of that attempt's error, for the admin's failures page and its group changes.

A group holds two kinds of jobs: ``FAILED`` ones, which spent their attempts (a group
retries them), and ``READY`` ones with attempts started, which failed and wait for their
next attempt (a group cancels them). A ready job an admin Retry put back (its attempts
start again from 0) has not failed since, and is in no group.

The class is read from the JSON ``errors`` column by the database itself, in the
``GROUP BY``, so the page costs one scan of the table's failed and retrying rows and
no column or writer has to keep a copy of it."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import CharField, Count, Func, Max, Min, Q, QuerySet
from django.db.models.functions import Coalesce
from django.db.models.sql.compiler import SQLCompiler
from django.utils.safestring import SafeString

from django_sqlqueue.admin import display
from django_sqlqueue.admin.changes import CANCEL, RETRY, Change
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job, JobStatus

#: The most groups the page lists, the most recently seen first.
MAX_GROUPS = 200

#: Per change a group can make: the jobs of the group it applies to.
GROUP_CHANGES: dict[str, tuple[Change, Q]] = {
    RETRY.name: (RETRY, Q(status=JobStatus.FAILED)),
    CANCEL.name: (CANCEL, Q(status=JobStatus.READY, attempts__gt=0)),
}


class LastErrorClass(Func):
    """The ``exception_class_path`` of the last error in ``errors``; "" when there is none
    (a job whose error the database refused to store is ``FAILED`` with no new record)."""

    output_field = CharField()

    def __init__(self) -> None:
        super().__init__("errors")

    def _extract(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, template: str) -> Any:
        return self.as_sql(compiler, connection, template=f"COALESCE({template}, '')")

    def as_postgresql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        return self._extract(compiler, connection, "(%(expressions)s -> -1 ->> 'exception_class_path')")

    def as_mysql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        # A path built from the length, not '$[last]': MySQL 8.0 and MariaDB before 10.9 lack it.
        return self._extract(
            compiler,
            connection,
            "JSON_UNQUOTE(JSON_EXTRACT(%(expressions)s,"
            " CONCAT('$[', JSON_LENGTH(%(expressions)s) - 1, '].exception_class_path')))",
        )

    def as_sqlite(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> Any:
        return self._extract(compiler, connection, "json_extract(%(expressions)s, '$[#-1].exception_class_path')")


def last_attempt_failed() -> Q:
    """The jobs whose last attempt failed: spent (``FAILED``) or waiting for a retry."""
    return GROUP_CHANGES[RETRY.name][1] | GROUP_CHANGES[CANCEL.name][1]


@dataclass
class Group:
    """The jobs of one task whose last attempt raised one exception class."""

    task: str
    error_class: str
    failed: int = 0
    waiting: int = 0
    first_seen: datetime.datetime | None = None
    last_seen: datetime.datetime | None = None
    newest: int = 0
    sample: SafeString = field(default_factory=SafeString)

    @property
    def count(self) -> int:
        return self.failed + self.waiting

    def see(self, row: Mapping[str, Any]) -> None:
        """Add one status's aggregate row of this group."""
        if row["status"] == JobStatus.FAILED:
            self.failed += row["count"]
        else:
            self.waiting += row["count"]
        self.first_seen = min(filter(None, [self.first_seen, row["first_seen"]]), default=None)
        self.last_seen = max(filter(None, [self.last_seen, row["last_seen"]]), default=None)
        self.newest = max(self.newest, row["newest"])


def groups() -> tuple[list[Group], int]:
    """Up to ``MAX_GROUPS`` groups, the most recently seen first, each with the last error
    of its newest job as its sample; and how many groups there are in all.

    A job is seen when its last attempt failed: a failed job's ``finished_at``; a job
    waiting for its retry does not finish, so the start of the attempt that failed."""
    alias = queue_db(Job)
    seen = Coalesce("finished_at", "started_at")
    rows = (
        Job.objects.using(alias)
        .filter(last_attempt_failed())
        .annotate(error_class=LastErrorClass())
        .values("task", "error_class", "status")
        .annotate(count=Count("pk"), first_seen=Min(seen), last_seen=Max(seen), newest=Max("pk"))
        .order_by()
    )
    found: dict[tuple[str, str], Group] = {}
    for row in rows:
        key = (row["task"], row["error_class"])
        found.setdefault(key, Group(*key)).see(row)
    everyone = sorted(found.values(), key=lambda group: (group.last_seen is not None, group.last_seen), reverse=True)
    shown = everyone[:MAX_GROUPS]
    newest = dict(Job.objects.using(alias).filter(pk__in=[group.newest for group in shown]).values_list("pk", "errors"))
    for group in shown:
        group.sample = display.errors_html(newest.get(group.newest, [])[-1:])
    return shown, len(everyone)


def group_jobs(change: Change, task: str, error_class: str) -> QuerySet[Job]:
    """The jobs of a group that ``change`` applies to: all of them, not one page."""
    return (
        Job.objects.filter(GROUP_CHANGES[change.name][1], task=task)
        .alias(error_class=LastErrorClass())
        .filter(error_class=error_class)
    )
