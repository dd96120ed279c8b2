"""The batch admin: each batch's counts, its callbacks and the jobs enqueued for them,
and a link to its jobs.

Read-only: a batch is written by ``Job.objects.batch()`` and its jobs' finishes, and
deleting one would leave its jobs pointing at nothing (pruning deletes a finished
batch once its jobs are gone)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from django_sqlqueue.admin import display, graph, times
from django_sqlqueue.models import JobBatch
from django_sqlqueue.rules.batches import CALLBACKS

FIELDS = (
    "id",
    "description",
    "created_exact",
    "finished_exact",
    "total",
    "pending",
    "succeeded",
    "failed",
    "jobs_link",
    "callbacks_shown",
    "workflow_graph",
)


def batch_jobs_url(batch: int) -> str:
    """The changelist of a batch's jobs."""
    return f"{reverse('admin:django_sqlqueue_job_changelist')}?{urlencode({'batch_id': batch})}"


class JobBatchAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Every batch, open or finished, with its counts and callbacks."""

    list_display = ["id", "description", "created", "finished", "total", "pending", "succeeded", "failed"]
    list_display_links = ["id", "description"]
    search_fields = ["=id", "description"]
    ordering = ["-id"]
    fields = FIELDS
    readonly_fields = FIELDS

    class Media:
        css = {"all": ["django_sqlqueue/admin.css"]}

    created = times.column("created_at", "created")
    created_exact = times.column("created_at", "created", exact=True)
    finished = times.column("finished_at", "finished")
    finished_exact = times.column("finished_at", "finished", exact=True)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """Its fields; the graph, which shows its jobs, only to whom may view jobs."""
        if request.user.has_perm("django_sqlqueue.view_job"):
            return FIELDS
        return tuple(name for name in FIELDS if name != "workflow_graph")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="jobs")
    def jobs_link(self, batch: JobBatch) -> SafeString:
        return format_html('<a href="{}">its {} jobs</a>', batch_jobs_url(batch.pk), batch.total)

    @admin.display(description="graph")
    def workflow_graph(self, batch: JobBatch) -> SafeString | str:
        return graph.drawing(graph.batch_workflow(batch.pk), group_url=graph.batch_url(batch.pk))

    @admin.display(description="callbacks")
    def callbacks_shown(self, batch: JobBatch) -> SafeString | str:
        """Each callback: its task and arguments, and the job enqueued for it (a link),
        or why none could be, or that it did not apply."""
        if not batch.callbacks:
            return "-"
        rows = []
        for when in CALLBACKS:
            if (spec := batch.callbacks.get(when)) is None:
                continue
            enqueued = batch.callback_jobs.get(when)
            if isinstance(enqueued, int):
                url = reverse("admin:django_sqlqueue_job_change", args=[enqueued])
                outcome = format_html('<a href="{}">job #{}</a>', url, enqueued)
            elif enqueued is not None:
                outcome = format_html("{}", enqueued)
            else:
                outcome = format_html("{}", "not enqueued (did not apply)" if batch.finished_at else "when it finishes")
            call = display.pretty_json({"args": spec["args"], "kwargs": spec["kwargs"]})
            rows.append((when, spec["task"], outcome, call))
        return format_html_join("", "<p><b>{}</b>: {} &rarr; {}{}</p>", rows)
