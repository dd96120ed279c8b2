"""The job admin: triage at millions of rows.

Jobs are written by code: the admin shows them read-only and changes them only
through the changes of ``changes.py`` — from the changelist, from buttons on a job's
page, or for every failed job a filter matches — and through the manager's verbs
behind the Edit and Enqueue pages (``job_forms.py``), each guarded by its own
permission and only on POST."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ORDER_VAR, ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST
from rangefilter.filters import DateRangeFilterBuilder

from django_sqlqueue.admin import (
    changes,
    display,
    failures,
    graph,
    overview,
    refresh,
    throughput,
    times,
    workflow,
)
from django_sqlqueue.admin.changes import CHANGES, Change
from django_sqlqueue.admin.filters import CheapCountPaginator, QueueFilter, StatusFilter, TagFilter, TaskFilter
from django_sqlqueue.admin.job_forms import JobFormPages
from django_sqlqueue.db import dependents, pausing
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job, JobStatus, Worker
from django_sqlqueue.rules.lifecycle import EDITABLE

#: The largest id a job can have (the id is a signed 64-bit integer on every database).
MAX_JOB_ID = 2**63 - 1

#: The characters of a task's and of a queue's name the list shows; the whole is on hover.
TASK_CHARS = 60
QUEUE_CHARS = 30

#: Per status, the time the list shows of a job (``JobAdmin.moment``) and the word before it;
#: a finished job's is ``finished_at``.
MOMENTS: dict[str, tuple[str, str]] = {
    JobStatus.WAITING: ("enqueued_at", "enqueued"),
    JobStatus.READY: ("shown_run_at", "due"),
    JobStatus.RUNNING: ("started_at", "started"),
}

#: The times with a date range filter and an index led by them.
INDEXED_TIMES = ("enqueued_at", "finished_at")

#: The action names of the changelist, each the name of a change; ``delete_selected``
#: replaces Django's own so that running jobs are skipped.
ACTION_CHANGES = {
    "retry": "retry",
    "retry_with_dependents": "retry_with_dependents",
    "cancel": "cancel",
    "run_now": "run_now",
    "delete_selected": "delete",
}


def _action(name: str, description: str) -> Any:
    """The changelist action ``name``: its change, guarded by the change's permission."""
    change = CHANGES[ACTION_CHANGES[name]]

    @admin.action(permissions=[change.permission], description=description)
    def action(modeladmin: JobAdmin, request: HttpRequest, queryset: QuerySet[Job]) -> HttpResponse | None:
        if change.deletes and "post" not in request.POST:
            return modeladmin.confirm_deletion(request, queryset)
        modeladmin.apply(request, change, queryset)
        return None

    action.__name__ = name
    return action


class JobChangeList(ChangeList):
    """Leaves out the columns the list never shows, which can be large.

    Filtered on a range of the enqueued or finished time, and not sorted by a column,
    it lists the jobs by that time, newest first (then by id), which reads the time's
    index backwards from the range's end: by id alone, PostgreSQL and MariaDB walk the
    primary key back from the newest job until they reach the range, which takes
    seconds on a table of millions of jobs."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Job]:
        rows = super().get_queryset(request, exclude_parameters).defer("args", "kwargs", "result")
        if ORDER_VAR not in self.params:
            for field in INDEXED_TIMES:
                if any(key.startswith(f"{field}__range__") for key in self.params):
                    return rows.order_by(f"-{field}", "-pk")
        return rows


class JobAdmin(JobFormPages):
    """Browse, filter and search jobs; retry, cancel, run now or delete them; edit and
    enqueue them (``JobFormPages``)."""

    # What a person triages by, narrow enough for a laptop beside the filters; the rest
    # (priority, worker, progress, every time) is on a job's page.
    list_display = ["id", "task_and_queue", "status_and_attempts", "moment", "last_error"]
    list_display_links = ["id"]
    list_filter = [
        ("status", StatusFilter),
        QueueFilter,
        TaskFilter,
        TagFilter,
        ("enqueued_at", DateRangeFilterBuilder(title="enqueued")),
        ("finished_at", DateRangeFilterBuilder(title="finished")),
        ("run_at", DateRangeFilterBuilder(title="run at")),
    ]
    # A number searches the id (the primary key); other words the task and the errors.
    search_fields = ["task", "errors"]
    search_help_text = "A job id, or words in the task's name or in its errors."
    ordering = ["-id"]
    list_per_page = 50
    paginator = CheapCountPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    actions = [
        _action("retry", "Retry the selected failed or cancelled jobs"),
        _action(
            "retry_with_dependents",
            "Retry the selected failed or cancelled jobs and the jobs their ends cancelled",
        ),
        _action("cancel", "Cancel the selected jobs (running ones are asked to stop)"),
        _action("run_now", "Run the selected scheduled jobs now"),
        _action("delete_selected", "Delete the selected jobs (not running ones)"),
    ]
    fieldsets = [
        (
            None,
            {"fields": ["id", "task", "queue", "status_badge", "priority", "attempts_of", "timeout", "progress_shown"]},
        ),
        (
            "Timings",
            {
                "fields": [
                    *("enqueued", "run_at_exact", "expires_exact", "started", "finished_exact", "waited", "ran"),
                    "worker_link",
                ]
            },
        ),
        ("Workflow", {"fields": ["waits_for", "waited_on_by", "batch_link", "workflow_graph"]}),
        ("Arguments and result", {"fields": ["args_pretty", "kwargs_pretty", "result_pretty"]}),
        ("Tags and meta", {"fields": ["tags_shown", "meta_pretty"]}),
        ("Errors", {"fields": ["errors_pretty"]}),
    ]
    readonly_fields = [str(field) for _, options in fieldsets for field in options["fields"]]

    class Media:
        css = {"all": ["django_sqlqueue/admin.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        return display.readable_run_at(super().get_queryset(request))

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return JobChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Job], search_term: str
    ) -> tuple[QuerySet[Job], bool]:
        term = search_term.strip().lstrip("#")
        # ASCII only: "²" is a digit to str.isdigit() but not to int().
        if term.isascii() and term.isdigit():
            pk = int(term)
            # Past the id column's range no job can match, and the database would refuse the number.
            return (queryset.filter(pk=pk) if pk <= MAX_JOB_ID else queryset.none()), False
        return super().get_search_results(request, queryset, search_term)

    # Permissions: jobs are never added or edited through Django's own forms; the Edit
    # and Enqueue pages have permissions of their own (``JobFormPages``).

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Job | None = None) -> bool:
        return False

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.retry_job")

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.cancel_job")

    def has_run_now_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.run_job_now")

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.pause_queue")

    def has_resume_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.resume_queue")

    def has_delete_permission(self, request: HttpRequest, obj: Job | None = None) -> bool:
        running = obj is not None and obj.status == JobStatus.RUNNING
        return not running and super().has_delete_permission(request, obj)

    def delete_model(self, request: HttpRequest, obj: Job) -> None:
        """Delete the job and the links that made it wait (neither end of a link is a
        foreign key), as the delete action does (``Job.objects.delete_jobs``: not while
        a worker holds it); what waited for it is the sweep's."""
        Job.objects.db_manager(str(obj._state.db)).delete_jobs([obj.pk])

    def may_make(self, request: HttpRequest, change: Change) -> bool:
        """Whether the user holds ``change``'s own permission."""
        return bool(getattr(self, f"has_{change.permission}_permission")(request))

    def check_permission(self, request: HttpRequest, change: Change) -> None:
        """Refuse with 403, not the changelist's "no action selected", a change the user may not make."""
        if not self.may_make(request, change):
            raise PermissionDenied

    # Changing jobs.

    def apply(self, request: HttpRequest, change: Change, jobs: QuerySet[Job]) -> None:
        """Make ``change`` to ``jobs`` and tell the user what was done and skipped."""
        self.check_permission(request, change)
        tally = changes.apply(change, jobs, request)
        level = messages.SUCCESS if tally.done or tally.requested else messages.WARNING
        if tally.failed:
            level = messages.ERROR
        self.message_user(request, changes.report(change, tally), level)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if request.method == "POST":
            for name in request.POST.getlist("action"):
                if name in ACTION_CHANGES:
                    self.check_permission(request, CHANGES[ACTION_CHANGES[name]])
        context = {
            "can_retry": self.has_retry_permission(request),
            "can_enqueue": self.has_enqueue_permission(request),
            **refresh.context(),
            **(extra_context or {}),
        }
        return refresh.fragment(
            request, super().changelist_view(request, context), "admin/django_sqlqueue/job/change_list_refresh.html"
        )

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return refresh.fragment(
            request,
            super().change_view(request, object_id, form_url, extra_context),
            "admin/django_sqlqueue/job/change_form_refresh.html",
        )

    def confirm_deletion(self, request: HttpRequest, jobs: QuerySet[Job]) -> TemplateResponse:
        """The page that asks before the delete action deletes (its POST carries ``post``)."""
        return TemplateResponse(
            request,
            "admin/django_sqlqueue/job/delete_confirmation_jobs.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Delete jobs?",
                "count": jobs.count(),
                "running": jobs.filter(status=JobStatus.RUNNING).count(),
                "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
                "select_across": request.POST.get("select_across", "0"),
                "action": "delete_selected",
            },
        )

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path("overview/", view(self.overview_view), name="django_sqlqueue_job_overview"),
            path(
                "overview/<str:action>/",
                view(require_POST(self.pause_view)),
                name="django_sqlqueue_job_pause",
            ),
            path("retry-failed/", view(self.retry_failed_view), name="django_sqlqueue_job_retry_failed"),
            path("failures/", view(self.failures_view), name="django_sqlqueue_job_failures"),
            path(
                "failures/<str:change>/",
                view(require_POST(self.failure_group_view)),
                name="django_sqlqueue_job_failure_group",
            ),
            path("enqueue/", view(self.enqueue_view), name="django_sqlqueue_job_enqueue"),
            path("<path:object_id>/edit/", view(self.edit_view), name="django_sqlqueue_job_edit"),
            path(
                "<path:object_id>/change/<str:change>/",
                view(require_POST(self.change_job_view)),
                name="django_sqlqueue_job_change_job",
            ),
            *super().get_urls(),
        ]

    def change_job_view(self, request: HttpRequest, object_id: str, change: str) -> HttpResponse:
        """A button on a job's page: one change to that job, then back to its page."""
        if change not in CHANGES:
            raise PermissionDenied
        job = self.get_object(request, object_id)
        if job is None:
            raise Http404(f"No job {object_id!r}.")
        self.apply(request, CHANGES[change], Job.objects.filter(pk=job.pk))
        if not Job.objects.filter(pk=job.pk).exists():
            return HttpResponseRedirect(reverse("admin:django_sqlqueue_job_changelist"))
        return HttpResponseRedirect(reverse("admin:django_sqlqueue_job_change", args=[job.pk]))

    def retry_failed_view(self, request: HttpRequest) -> HttpResponse:
        """Every failed job the changelist's filters and search match, not one page: on GET
        a page that says how many and asks; on POST (same query string) retry them all."""
        self.check_permission(request, changes.RETRY)
        query = request.GET.urlencode()
        back = reverse("admin:django_sqlqueue_job_changelist") + (f"?{query}" if query else "")
        try:
            failed = self.get_changelist_instance(request).queryset.filter(status=JobStatus.FAILED)
        except IncorrectLookupParameters:
            return HttpResponseRedirect(f"{back}{'&' if query else '?'}e=1")
        if request.method == "POST":
            self.apply(request, changes.RETRY, failed)
            return HttpResponseRedirect(back)
        paginator = CheapCountPaginator(failed, 1)
        return TemplateResponse(
            request,
            "admin/django_sqlqueue/job/retry_failed.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Retry failed jobs?",
                "count": paginator.count,
                "capped": paginator.capped,
                "filters": list(request.GET.lists()),
                "query": query,
                "back": back,
            },
        )

    def failures_view(self, request: HttpRequest) -> TemplateResponse:
        """The jobs whose last attempt failed, grouped by task and exception class."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        shown, total = failures.groups()
        return TemplateResponse(
            request,
            "admin/django_sqlqueue/job/failures.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Failures by task and exception",
                "groups": shown,
                "total": total,
                "can_retry": self.has_retry_permission(request),
                "can_cancel": self.has_cancel_permission(request),
            },
        )

    def failure_group_view(self, request: HttpRequest, change: str) -> HttpResponse:
        """Retry or cancel every job of one group (``task`` and ``error_class`` posted),
        then back to the failures page."""
        if change not in failures.GROUP_CHANGES:
            raise PermissionDenied
        group_change = failures.GROUP_CHANGES[change][0]
        task, error_class = request.POST.get("task"), request.POST.get("error_class")
        if task is None or error_class is None:
            raise Http404("No such group.")
        self.apply(request, group_change, failures.group_jobs(group_change, task, error_class))
        return HttpResponseRedirect(reverse("admin:django_sqlqueue_job_failures"))

    def overview_view(self, request: HttpRequest) -> HttpResponse:
        """Per queue: jobs by status, lag of the oldest due job, succeeded and failed over the last hour and week."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        page = TemplateResponse(
            request,
            "admin/django_sqlqueue/job/overview.html",
            {
                **self.admin_site.each_context(request),
                **refresh.context(),
                "opts": self.opts,
                "title": "Queue overview",
                "queues": overview.queue_stats(),
                "can_pause": self.has_pause_permission(request),
                "can_resume": self.has_resume_permission(request),
                "statuses": JobStatus.choices,
                "spans": throughput.SPANS,
                "chart_width": throughput.CHART_WIDTH,
                "chart_height": throughput.CHART_HEIGHT,
            },
        )
        return refresh.fragment(request, page, "admin/django_sqlqueue/job/overview_refresh.html")

    def pause_view(self, request: HttpRequest, action: str) -> HttpResponse:
        """The overview's Pause and Resume buttons: the queue named by ``queue`` (posted),
        each button under its own permission; then back to the overview."""
        if action not in ("pause", "resume") or not getattr(self, f"has_{action}_permission")(request):
            raise PermissionDenied
        queue = request.POST.get("queue", "")
        try:
            if action == "pause":
                done = pausing.pause_queue(queue, request.POST.get("reason", ""))
                said = f"Paused queue {queue!r}: workers stop claiming its jobs within a second."
                unchanged = f"Queue {queue!r} was already paused."
            else:
                done = pausing.resume_queue(queue)
                said, unchanged = f"Resumed queue {queue!r}.", f"Queue {queue!r} was not paused."
        except ValueError as error:
            self.message_user(request, str(error), messages.ERROR)
        else:
            self.message_user(request, said if done else unchanged, messages.SUCCESS if done else messages.WARNING)
        return HttpResponseRedirect(reverse("admin:django_sqlqueue_job_overview"))

    def render_change_form(self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        job = context.get("original")
        if job is not None:
            context.update(refresh.context(live=job.status == JobStatus.RUNNING))
            context["job_changes"] = [
                change
                for change in CHANGES.values()
                if not change.deletes
                and self.may_make(request, change)
                and Job.objects.filter(Q(pk=job.pk) & change.applies()).exists()
                and (not change.retries_dependents or self.has_cancelled_dependents(job))
            ]
            context["can_edit"] = job.status in EDITABLE and self.has_edit_permission(request)
        return super().render_change_form(request, context, *args, **kwargs)

    def has_cancelled_dependents(self, job: Job) -> bool:
        """Whether retrying ``job`` could bring back jobs its end cancelled: its page
        offers "Retry with cancelled dependents" only then."""
        return bool(dependents.cancelled_dependents(Job, queue_db(Job), [job.pk], lock=False))

    # Columns and fields.

    @admin.display(description="status", ordering="status")
    def status_badge(self, job: Job) -> SafeString:
        return display.status_badge(job.status, job.end_reason)

    @admin.display(description="task, queue", ordering="task")
    def task_and_queue(self, job: Job) -> SafeString:
        return format_html(
            '{}<br><span class="quiet">{}</span>',
            display.clipped(job.task, TASK_CHARS),
            display.clipped(job.queue, QUEUE_CHARS),
        )

    @admin.display(description="status, attempts", ordering="status")
    def status_and_attempts(self, job: Job) -> SafeString:
        return format_html(
            '{} <span class="quiet sqlqueue-nowrap" title="attempts started, of {}">{}</span>',
            display.status_badge(job.status, job.end_reason),
            job.max_attempts,
            self.attempts_of(job),
        )

    @admin.display(description="when")
    def moment(self, job: Job) -> SafeString:
        """The time that matters in the job's status: when it is due, started or ended."""
        field, verb = MOMENTS.get(job.status, ("finished_at", "ended"))
        return format_html("{} {}", verb, times.when(getattr(job, field)))

    # ``shown_run_at`` is ``run_at`` as the database driver can read it (``display.readable_run_at``).
    run_at_exact = times.column("shown_run_at", "run at", exact=True)
    finished_exact = times.column("finished_at", "finished at", exact=True)
    expires_exact = times.column("expires_at", "expires at (never started from then on)", exact=True)
    enqueued = times.column("enqueued_at", "enqueued at", exact=True)
    started = times.column("started_at", "latest attempt started at", exact=True)

    @admin.display(description="attempts")
    def attempts_of(self, job: Job) -> str:
        """Its attempts of its most, and its snoozes when it had any (they count no attempt)."""
        snoozed = f", snoozed {job.snoozes}" if job.snoozes else ""
        return f"{job.attempts}/{job.max_attempts}{snoozed}"

    @admin.display(description="progress")
    def progress_shown(self, job: Job) -> SafeString | str:
        return display.progress_bar(job.progress)

    @admin.display(description="last error")
    def last_error(self, job: Job) -> SafeString | str:
        return display.short_error(job.errors)

    @admin.display(description="waited before its last attempt")
    def waited(self, job: Job) -> str:
        return display.duration(job.enqueued_at, job.started_at)

    @admin.display(description="ran")
    def ran(self, job: Job) -> str:
        return display.duration(job.started_at, job.finished_at)

    @admin.display(description="worker")
    def worker_link(self, job: Job) -> SafeString | str:
        worker = Worker.objects.filter(name=job.worker).first() if job.worker else None
        if worker is None:
            return job.worker or "-"
        url = reverse("admin:django_sqlqueue_worker_change", args=[worker.pk])
        return format_html('<a href="{}">{}</a>', url, job.worker)

    @admin.display(description="waits for")
    def waits_for(self, job: Job) -> SafeString | str:
        return workflow.linked_jobs(job.dependencies.order_by("parent_id"), "parent")

    @admin.display(description="waited on by")
    def waited_on_by(self, job: Job) -> SafeString | str:
        return workflow.linked_jobs(job.dependents.order_by("child_id"), "child")

    @admin.display(description="graph")
    def workflow_graph(self, job: Job) -> SafeString | str:
        return graph.drawing(graph.job_workflow(job), focus=job.pk, group_url=graph.ids_url)

    @admin.display(description="batch")
    def batch_link(self, job: Job) -> SafeString | str:
        if job.batch_id is None:
            return "-"
        url = reverse("admin:django_sqlqueue_jobbatch_change", args=[job.batch_id])
        return format_html('<a href="{}">batch {}</a>', url, job.batch_id)

    @admin.display(description="args")
    def args_pretty(self, job: Job) -> SafeString:
        return display.pretty_json(job.args)

    @admin.display(description="kwargs")
    def kwargs_pretty(self, job: Job) -> SafeString:
        return display.pretty_json(job.kwargs)

    @admin.display(description="result")
    def result_pretty(self, job: Job) -> SafeString:
        return display.pretty_json(job.result)

    @admin.display(description="meta")
    def meta_pretty(self, job: Job) -> SafeString:
        return display.pretty_json(job.meta)

    @admin.display(description="tags")
    def tags_shown(self, job: Job) -> SafeString | str:
        """Each tag, linked to the changelist of the jobs that have it."""
        changelist = reverse("admin:django_sqlqueue_job_changelist")
        links = ((f"{changelist}?{urlencode({'tag': tag})}", tag) for tag in job.tag_names())
        return format_html_join(", ", '<a href="{}">{}</a>', links) or "-"

    @admin.display(description="errors, newest first")
    def errors_pretty(self, job: Job) -> SafeString:
        return display.errors_html(job.errors)


def running_jobs_url(worker: str) -> str:
    """The changelist of the jobs a worker holds now."""
    query = urlencode({"worker": worker, "status__exact": JobStatus.RUNNING})
    return f"{reverse('admin:django_sqlqueue_job_changelist')}?{query}"
