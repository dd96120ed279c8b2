"""The worker admin: which worker processes are alive, their heartbeats, the jobs they hold,
and which supervisor leads maintenance (its worker processes are marked). A web process's
embedded workers are listed alike, named ``embedded:HOST:PID:…`` (``runner/embedded.py``).

Read-only: worker rows belong to the supervisors that write them, and a dead
worker's row goes when the maintenance's holder rescues its jobs."""

from __future__ import annotations

import datetime
from typing import Any

from django.contrib import admin
from django.db.models import BooleanField, Count, Exists, ExpressionWrapper, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Concat
from django.db.models.lookups import StartsWith
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import capfirst

from django_sqlqueue.admin import display, times
from django_sqlqueue.admin.jobs import TASK_CHARS, running_jobs_url
from django_sqlqueue.conf import conf
from django_sqlqueue.db import leadership
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.routing import read_db
from django_sqlqueue.models import Job, JobStatus, Leader, Worker
from django_sqlqueue.rules.embedded import EMBEDDED_PREFIX

#: The characters of a worker's queues the list shows; all of them are on hover.
QUEUES_CHARS = 80

#: The jobs listed on a worker's page; the link to the changelist shows them all.
LISTED_JOBS = 50


FIELDS = (
    "name",
    "host",
    "pid",
    "queues_shown",
    "started_exact",
    "heartbeat_exact",
    "is_alive",
    "under_leader",
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

    # The name carries the host and the pid (host:pid:index); they and the start are on the worker's page.
    list_display = ["name", "is_alive", "under_leader", "heartbeat", "running", "queues_shown"]
    list_display_links = ["name"]
    list_filter = [AliveFilter, "host"]
    search_fields = ["name", "host"]
    ordering = ["name"]
    fields = FIELDS
    readonly_fields = FIELDS

    heartbeat = times.column("heartbeat_at", "heartbeat")
    heartbeat_exact = times.column("heartbeat_at", "heartbeat", exact=True)
    started_exact = times.column("started_at", "started", exact=True)

    class Media:
        css = {"all": ["django_sqlqueue/admin.css"]}

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
        # A worker process's name starts with its supervisor's, the lease's holder.
        leader = Leader.objects.filter(
            StartsWith(OuterRef("name"), Concat("holder", Value(":"))),
            role=leadership.MAINTENANCE,
            expires_at__gte=DatabaseNow(),
        )
        return workers.annotate(
            alive=ExpressionWrapper(Q(heartbeat_at__gte=DatabaseNow() - lease), output_field=BooleanField()),
            running_count=Coalesce(Subquery(held), 0),
            leads=Exists(leader),
        )

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """Says which supervisor leads maintenance, above the list."""
        current = leadership.current(read_db(Leader))
        if current is None:
            lead = (
                "No supervisor holds the maintenance lease: no runworkers (nor web process with embedded "
                "workers) is running, or it is being taken over."
            )
        else:
            holder = "Web process" if current.holder.startswith(EMBEDDED_PREFIX) else "Supervisor"
            lead = f"{holder} {current.holder} leads maintenance (rescue, recurring jobs, pruning)."
        # The page's name for its heading and the browser's tab: the lead's sentence (a
        # warning when no supervisor holds the lease) goes under the heading instead.
        named = {"title": capfirst(Worker._meta.verbose_name_plural), "maintenance_lead": lead}
        return super().changelist_view(request, {**named, **(extra_context or {})})

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Worker | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Worker | None = None) -> bool:
        return False

    @admin.display(description="alive", boolean=True, ordering="alive")
    def is_alive(self, worker: Worker) -> bool:
        return bool(worker.alive)  # type: ignore[attr-defined]

    @admin.display(description="leader", boolean=True, ordering="leads")
    def under_leader(self, worker: Worker) -> bool:
        """Whether its supervisor holds the maintenance lease."""
        return bool(worker.leads)  # type: ignore[attr-defined]

    @admin.display(description="queues")
    def queues_shown(self, worker: Worker) -> SafeString | str:
        return display.clipped(", ".join(worker.queues), QUEUES_CHARS) if worker.queues else "all"

    @admin.display(description="running", ordering="running_count")
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
                (
                    reverse("admin:django_sqlqueue_job_change", args=[job.pk]),
                    job.pk,
                    display.clipped(job.task, TASK_CHARS),
                    display.status_badge(job.status),
                )
                for job in jobs
            ),
        )
        return format_html("<ul>{}</ul>", links)
