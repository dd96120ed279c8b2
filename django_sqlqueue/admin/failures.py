"""Failures grouped: the jobs whose last attempt failed, by task and by the exception
class of that attempt's error, for the admin's failures page and its group changes.

A group holds two kinds of jobs: ``FAILED`` ones, which spent their attempts (a group
retries them), and ``READY`` ones with attempts started, which failed and wait for their
next attempt (a group cancels them). A ready job an admin Retry put back (its attempts
start again from 0) has not failed since, and is in no group.

The class is ``Job.last_error_class``, written with each failed attempt's error, so
the groups are counted from the failures index (``db/schema/failures.py``; the retrying jobs,
on PostgreSQL and SQLite, from the ready jobs: few in a queue that keeps up), never by
reading the JSON of every failed row, which took seconds at a million rows."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Max, Min, QuerySet
from django.utils.safestring import SafeString

from django_sqlqueue.admin import display
from django_sqlqueue.admin.changes import CANCEL, RETRY, Change
from django_sqlqueue.db.routing import read_db
from django_sqlqueue.db.schema.failures import FailureSeenAt, InFailureGroup
from django_sqlqueue.models import Job, JobStatus

#: The most groups the page lists, the most recently seen first.
MAX_GROUPS = 200

#: Per change a group can make: the status of the jobs of the group it applies to.
GROUP_CHANGES: dict[str, tuple[Change, str]] = {
    RETRY.name: (RETRY, JobStatus.FAILED),
    CANCEL.name: (CANCEL, JobStatus.READY),
}


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

    def see(self, row: Mapping[str, Any], *, failed: bool) -> None:
        """Add the aggregate row of this group's failed jobs, or of its retrying ones."""
        if failed:
            self.failed = row["count"]
        else:
            self.waiting = row["count"]
        self.first_seen = min(filter(None, [self.first_seen, row["first_seen"]]), default=None)
        self.last_seen = max(filter(None, [self.last_seen, row["last_seen"]]), default=None)
        self.newest = max(self.newest, row["newest"])


def groups() -> tuple[list[Group], int]:
    """Up to ``MAX_GROUPS`` groups, the most recently seen first, each with the last error
    of its newest job as its sample; and how many groups there are in all.

    A job is seen when its last attempt failed: a failed job's ``finished_at``; a job
    waiting for its retry does not finish, so the start of the attempt that failed."""
    alias = read_db(Job)
    found: dict[tuple[str, str], Group] = {}
    for change in (RETRY, CANCEL):
        status = GROUP_CHANGES[change.name][1]
        rows = (
            Job.objects.using(alias)
            .filter(InFailureGroup(status))
            .values("task", "last_error_class")
            .annotate(
                count=Count("pk"),
                first_seen=Min(FailureSeenAt(status)),
                last_seen=Max(FailureSeenAt(status)),
                newest=Max("pk"),
            )
            .order_by()
        )
        for row in rows:
            key = (row["task"], row["last_error_class"])
            found.setdefault(key, Group(*key)).see(row, failed=change is RETRY)
    everyone = sorted(found.values(), key=lambda group: (group.last_seen is not None, group.last_seen), reverse=True)
    shown = everyone[:MAX_GROUPS]
    newest = dict(Job.objects.using(alias).filter(pk__in=[group.newest for group in shown]).values_list("pk", "errors"))
    for group in shown:
        group.sample = display.errors_html(newest.get(group.newest, [])[-1:], folded=True)
    return shown, len(everyone)


def group_jobs(change: Change, task: str, error_class: str) -> QuerySet[Job]:
    """The jobs of a group that ``change`` applies to: all of them, not one page."""
    return Job.objects.filter(InFailureGroup(GROUP_CHANGES[change.name][1]), task=task, last_error_class=error_class)
