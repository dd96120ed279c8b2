"""The job changelist's filters and paginator, built to stay fast at millions of rows:
nothing here counts or scans the whole table on a page view."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

from django_sqlqueue.conf import conf
from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.schema.indexes import InStatus
from django_sqlqueue.rules import registry
from django_sqlqueue.rules.lifecycle import JobStatus
from django_sqlqueue.rules.queues import offered_queues

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
        estimate = -1 if rows.query.where else engine_for(rows.db).estimated_rows(rows.model._meta.db_table)
        if estimate > COUNT_CAP:
            self.estimated = True
            return estimate
        # Only the key: a column the list shows (``shown_run_at``) would have each row read.
        count = rows.order_by().values("pk")[: COUNT_CAP + 1].count()
        self.capped = count > COUNT_CAP
        return min(count, COUNT_CAP)


class StatusFilter(admin.ChoicesFieldListFilter):
    """The status filter, one status read through :class:`InStatus`: on MySQL/MariaDB
    the waiting jobs are found in their index's hidden column, not by a scan of the
    table (which an index led by ``status`` would cost every claim and finish), and the
    jobs of a finished status in the finished indexes' one, so that with a finished
    range they are counted from that index alone."""

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        chosen = cast("list[str]", self.used_parameters.get(self.lookup_kwarg, []))
        if list(self.used_parameters) == [self.lookup_kwarg] and len(chosen) == 1 and chosen[0] in JobStatus.values:
            return queryset.filter(InStatus(chosen[0]))
        return cast("QuerySet[Any]", super().queryset(request, queryset))


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
        registered = (task.queue for task in registry.registered_tasks() if task.queue)
        return offered_queues(conf.SQLQUEUE_QUEUES, conf.SQLQUEUE_DEFAULT_QUEUE, registered)


class TaskFilter(ChoicesFromCodeFilter):
    """Every registered task."""

    title = "task"
    parameter_name = "task"

    def values(self) -> set[str]:
        return {task.name for task in registry.registered_tasks()}


class TagFilter(ChoicesFromCodeFilter):
    """The tags the registered tasks declare (``@job(tags=...)``); any other tag filters
    too, from the query string (``?tag=tenant:42``, as a job's page links its tags).
    Filters through the tags' index (``Job.objects.tagged``), never a ``DISTINCT``."""

    title = "tag"
    parameter_name = "tag"

    def values(self) -> set[str]:
        return {tag for task in registry.registered_tasks() for tag in task.tags}

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.tagged(value)  # type: ignore[attr-defined]
