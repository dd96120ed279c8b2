"""The job changelist's filters and paginator, built to stay fast at millions of rows:
nothing here counts or scans the whole table on a page view."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

from django_sqlqueue.conf import conf
from django_sqlqueue.rules import registry

#: A filtered changelist counts its rows up to this many and no further.
COUNT_CAP = 10_000


class CheapCountPaginator(Paginator):  # type: ignore[type-arg]
    """A paginator that never counts a big table: the unfiltered changelist takes the
    planner's row estimate, a filtered one counts at most ``COUNT_CAP + 1`` rows.

    ``estimated`` and ``capped`` say which, so the page can say "about" or "more than"."""

    estimated = False
    capped = False

    @cached_property
    def count(self) -> int:
        rows = cast("QuerySet[Any]", self.object_list)
        if not rows.query.where and (estimate := estimated_rows(rows)) > COUNT_CAP:
            self.estimated = True
            return estimate
        count = rows.order_by()[: COUNT_CAP + 1].count()
        self.capped = count > COUNT_CAP
        return min(count, COUNT_CAP)


def estimated_rows(rows: QuerySet[Any]) -> int:
    """The database's own estimate of the rows in the queryset's table (kept by
    ANALYZE / InnoDB statistics), or -1 where there is none (SQLite)."""
    connection = connections[rows.db]
    table = rows.model._meta.db_table
    if connection.vendor == "postgresql":
        sql = "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)"
        params = [connection.ops.quote_name(table)]
    elif connection.vendor == "mysql":
        sql = "SELECT table_rows FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = %s"
        params = [table]
    else:
        return -1
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return -1 if row is None or row[0] is None else int(row[0])


class ChoicesFromCodeFilter(admin.SimpleListFilter):
    """A filter on a column whose choices come from the code (settings, registered
    tasks), not from a ``DISTINCT`` over the whole table; any value in the query
    string still filters, so a link to a job's stale queue or task works."""

    def values(self) -> set[str]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        choices = self.values()
        if (current := self.value()) is not None:
            choices.add(current)
        return [(value, value) for value in sorted(choices)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(**{str(self.parameter_name): value})


class QueueFilter(ChoicesFromCodeFilter):
    """``SQLQUEUE_QUEUES`` when set, else the default queue and the registered tasks' queues."""

    title = "queue"
    parameter_name = "queue"

    def values(self) -> set[str]:
        if (allowed := conf.SQLQUEUE_QUEUES) is not None:
            return set(allowed)
        return {conf.SQLQUEUE_DEFAULT_QUEUE} | {task.queue for task in registry.registered_tasks() if task.queue}


class TaskFilter(ChoicesFromCodeFilter):
    """Every registered task."""

    title = "task"
    parameter_name = "task"

    def values(self) -> set[str]:
        return {task.name for task in registry.registered_tasks()}
