"""The worker admin: which worker processes are alive, their heartbeats, the jobs they hold.

Read-only: worker rows belong to the supervisors that write them, and a dead
worker's row goes when a live supervisor rescues its jobs."""

from __future__ import annotations

import datetime
from typing import Any

from django.contrib import admin
from django.db.models import BooleanField, Count, ExpressionWrapper, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from django_sqlqueue.admin.display import status_badge
from django_sqlqueue.admin.jobs import running_jobs_url
from django_sqlqueue.conf import conf
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.models import Job, JobStatus, Worker

#: The jobs listed on a worker's page; the link to the changelist shows them all.
LISTED_JOBS = 50


FIELDS = (
    "name",
    "host",
    "pid",
    "queues_shown",
    "started_at",
    "heartbeat_at",
    "is_alive",
    "jobs_succeeded",
    "jobs_failed",
    "running",
    "running_jobs",
)


class AliveFilter(admin.SimpleListFilter):
    """Alive: a heartbeat within ``SQLQUEUE_LEASE`` by the database's clock."""

    title = "alive"
    parameter_name = "alive"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Alive"), ("no", "Dead (lease expired)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(alive=True)
        if self.value() == "no":
            return queryset.filter(alive=False)
        return queryset


class WorkerAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Every registered worker process, alive or dead, and the jobs it holds."""

    list_display = ["name", "host", "pid", "is_alive", "heartbeat_at", "started_at", "running", "queues_shown"]
    list_display_links = ["name"]
    list_filter = [AliveFilter, "host"]
    search_fields = ["name", "host"]
    ordering = ["name"]
    fields = FIELDS
    readonly_fields = FIELDS

    def get_queryset(self, request: HttpRequest) -> QuerySet[Worker]:
        lease = datetime.timedelta(seconds=conf.SQLQUEUE_LEASE)
        held = (
            Job.objects.filter(status=JobStatus.RUNNING, worker=OuterRef("name"))
            .order_by()
            .values("worker")
            .annotate(count=Count("pk"))
            .values("count")
        )
        workers: QuerySet[Worker] = super().get_queryset(request)
        return workers.annotate(
            alive=ExpressionWrapper(Q(heartbeat_at__gte=DatabaseNow() - lease), output_field=BooleanField()),
            running_count=Coalesce(Subquery(held), 0),
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Worker | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Worker | None = None) -> bool:
        return False

    @admin.display(description="alive", boolean=True, ordering="alive")
    def is_alive(self, worker: Worker) -> bool:
        return bool(worker.alive)  # type: ignore[attr-defined]

    @admin.display(description="queues")
    def queues_shown(self, worker: Worker) -> str:
        return ", ".join(worker.queues) if worker.queues else "all"

    @admin.display(description="running jobs", ordering="running_count")
    def running(self, worker: Worker) -> SafeString:
        count = worker.running_count  # type: ignore[attr-defined]
        return format_html('<a href="{}">{}</a>', running_jobs_url(worker.name), count)

    @admin.display(description="jobs it holds")
    def running_jobs(self, worker: Worker) -> SafeString | str:
        jobs = Job.objects.filter(status=JobStatus.RUNNING, worker=worker.name).order_by("pk")[:LISTED_JOBS]
        if not jobs:
            return "-"
        links = format_html_join(
            "",
            '<li><a href="{}">#{} {}</a> {}</li>',
            (
                (reverse("admin:django_sqlqueue_job_change", args=[job.pk]), job.pk, job.task, status_badge(job.status))
                for job in jobs
            ),
        )
        return format_html("<ul>{}</ul>", links)
