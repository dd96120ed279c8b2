"""The schedules admin: each recurring job, when it runs next, its last runs and their
outcomes, and the actions disable, enable and run now. Its times are shown in each
entry's own time zone, as ``sqlqueue_schedule`` shows them.

``SQLQUEUE_SCHEDULE``'s entries (a supervisor writes them at start-up) are read-only
here: the admin only switches one off and on, or runs it once. Entries defined in the
admin are added, edited and deleted here too (``ScheduleForm`` checks them), with the
model's own add, change and delete permissions, apart from the jobs'. A save is written
by ``recurrence.define``: the next tick, a second later, runs the edit, with no restart."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.forms import ModelForm
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from django_sqlqueue.admin import display, times
from django_sqlqueue.admin.jobs import TASK_CHARS
from django_sqlqueue.admin.schedule_form import FIELDS as FORM_FIELDS
from django_sqlqueue.admin.schedule_form import ScheduleForm
from django_sqlqueue.db import recurrence
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.exceptions import SQLQueueError
from django_sqlqueue.models import Job, Schedule
from django_sqlqueue.rules.recurrence import DefinedIn, wall_time

#: What the page shows of an entry besides its definition, never edited.
SHOWN = ("defined_in", "problem", "next_tick", "upcoming", "last_run", "recent_runs")
#: An entry as a page shows it read-only (settings' entries, or without the change permission).
FIELDS = (
    "key",
    "task",
    "expression",
    "tz",
    "missed",
    "args",
    "kwargs",
    "queue",
    "priority",
    "enabled",
    *SHOWN,
)
#: The ticks after the next one that a page lists.
UPCOMING = 4
#: A problem as the list shows it, whole on hover.
PROBLEM_CHARS = 60
#: A key as the list shows it, whole on hover.
KEY_CHARS = 40


class ScheduleAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Every recurring job, with its next and last run."""

    # Narrow enough for a laptop beside the filter; each time's zone is in its exact time, on hover.
    list_display = ["key_shown", "task_shown", "expression", "next_tick", "last_run", "enabled"]
    list_filter = ["enabled", "defined_in"]
    search_fields = ["key", "task"]
    ordering = ["key"]
    form = ScheduleForm
    actions = ["disable", "enable", "run_now"]

    class Media:
        css = {"all": ["django_sqlqueue/admin.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Schedule]:
        last_status = Job.objects.filter(pk=OuterRef("last_job_id")).values("status")[:1]
        schedules: QuerySet[Schedule] = super().get_queryset(request)
        return schedules.annotate(last_job_status=Subquery(last_status))

    def get_fields(self, request: HttpRequest, obj: Schedule | None = None) -> Any:
        if obj is None:
            return FORM_FIELDS
        if self.has_change_permission(request, obj):
            return [*FORM_FIELDS, *SHOWN]
        return FIELDS

    def get_readonly_fields(self, request: HttpRequest, obj: Schedule | None = None) -> Any:
        return () if obj is None else SHOWN

    def has_change_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        """The model's change permission, for the entries defined in the admin only."""
        return super().has_change_permission(request, obj) and _defined_here(obj)

    def has_delete_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        """The model's delete permission, for the entries defined in the admin only: a
        settings' entry goes with a deploy (the bulk delete refuses a selection with one)."""
        return super().has_delete_permission(request, obj) and _defined_here(obj)

    def save_model(self, request: HttpRequest, obj: Schedule, form: ModelForm, change: bool) -> None:  # type: ignore[type-arg]
        recurrence.define(obj, queue_db(Schedule))

    def has_enable_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.enable_schedule")

    def has_run_now_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.run_schedule_now")

    @admin.display(description="key", ordering="key")
    def key_shown(self, schedule: Schedule) -> SafeString:
        """Its name, and where it is defined under it."""
        return format_html(
            '{}<br><span class="quiet">{}</span>', display.clipped(schedule.key, KEY_CHARS), schedule.defined_in
        )

    @admin.display(description="task", ordering="task")
    def task_shown(self, schedule: Schedule) -> SafeString:
        """Its task, and under it why its ticks enqueue nothing, if they do not."""
        task = display.clipped(schedule.task, TASK_CHARS)
        if (problem := recurrence.row_problem(schedule)) is None:
            return task
        shown = display.clipped(problem, PROBLEM_CHARS)
        return format_html('{}<br><span class="sqlqueue-problem">{}</span>', task, shown)

    @admin.display(description="problem")
    def problem(self, schedule: Schedule) -> str:
        """Why its ticks enqueue nothing (a supervisor logs it too), in whole."""
        return recurrence.row_problem(schedule) or "none: its ticks enqueue jobs"

    @admin.display(description="ticks after")
    def upcoming(self, schedule: Schedule) -> SafeString | str:
        """The ticks after the next one, exact, in the entry's zone."""
        if schedule.next_tick_at is None:
            return "-"
        try:
            ticks = recurrence.entry_of(schedule).next_ticks(recurrence.aware(schedule.next_tick_at), UPCOMING)
        except ImproperlyConfigured:
            return "-"
        return format_html_join(mark_safe("<br>"), "{}", ((wall_time(tick, schedule.tz),) for tick in ticks))

    @admin.display(description="last runs")
    def recent_runs(self, schedule: Schedule) -> SafeString | str:
        """Its last jobs, newest first: when each was due and its outcome (or that it
        was pruned)."""
        ids = list(schedule.recent_jobs) or ([schedule.last_job_id] if schedule.last_job_id else [])
        if not ids:
            return "none yet"
        jobs = {job.pk: job for job in Job.objects.using(queue_db(Job)).filter(pk__in=ids).only("run_at", "status")}
        return format_html(
            '<ul class="sqlqueue-runs">{}</ul>',
            format_html_join("", "<li>{}</li>", ((_run(pk, jobs.get(pk), schedule.tz),) for pk in ids)),
        )

    @admin.display(description="next tick", ordering="next_tick_at")
    def next_tick(self, schedule: Schedule) -> SafeString | str:
        return times.when(schedule.next_tick_at, zone=schedule.tz)

    @admin.display(description="last run", ordering="last_run_at")
    def last_run(self, schedule: Schedule) -> SafeString | str:
        """When it last ran, its job and that job's status ("pruned" once it is gone)."""
        when = "never" if schedule.last_run_at is None else times.when(schedule.last_run_at, zone=schedule.tz)
        if schedule.last_job_id is None:
            return when
        status = getattr(schedule, "last_job_status", None)
        return format_html(
            "{} {} {}",
            when,
            _job_link(schedule.last_job_id),
            "pruned" if status is None else display.status_badge(status),
        )

    @admin.action(permissions=["enable"], description="Disable the selected schedules")
    def disable(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        using = queue_db(Schedule)
        with transaction.atomic(using=using):
            changed = queryset.using(using).select_for_update().filter(enabled=True).update(enabled=False)
        self.message_user(request, f"Disabled {changed} schedule(s).", messages.SUCCESS)

    @admin.action(permissions=["enable"], description="Enable the selected schedules (from now on)")
    def enable(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        using = queue_db(Schedule)
        with transaction.atomic(using=using):
            rows = list(queryset.using(using).select_for_update().filter(enabled=False))
            recurrence.enable(rows, using)
        self.message_user(request, f"Enabled {len(rows)} schedule(s); they run from their next tick.", messages.SUCCESS)

    @admin.action(permissions=["run_now"], description="Run the selected schedules now (once each)")
    def run_now(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        using = queue_db(Schedule)
        try:
            with transaction.atomic(using=using):
                jobs = [recurrence.run_now(row, using) for row in queryset.using(using).select_for_update()]
        except (SQLQueueError, ImproperlyConfigured) as error:
            self.message_user(request, f"Nothing was enqueued: {error}", messages.ERROR)
            return
        shown = ", ".join(f"#{job.pk}" for job in jobs)
        self.message_user(request, f"Enqueued {len(jobs)} job(s): {shown}.", messages.SUCCESS)


def _defined_here(obj: Schedule | None) -> bool:
    return obj is None or obj.defined_in == DefinedIn.ADMIN


def _job_link(pk: int) -> SafeString:
    return format_html('<a href="{}">#{}</a>', reverse("admin:django_sqlqueue_job_change", args=[pk]), pk)


def _run(pk: int, job: Job | None, tz: str) -> SafeString:
    """One of a schedule's last jobs: its link, when it was due, its status."""
    if job is None:
        return format_html("{} pruned", _job_link(pk))
    return format_html("{} due {} {}", _job_link(pk), times.when(job.run_at, zone=tz), display.status_badge(job.status))
