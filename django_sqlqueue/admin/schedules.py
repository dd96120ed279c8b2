"""The schedules admin: each ``SQLQUEUE_SCHEDULE`` entry, when it runs next, its last
run and job, and the actions disable, enable and run now. Its times are shown in each
entry's own time zone, as ``sqlqueue_schedule`` shows them.

Entries come from settings (a supervisor writes them at start-up), so nothing here adds,
edits or deletes one; the admin only switches an entry off and on, or runs it once."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from django_sqlqueue.admin import display, times
from django_sqlqueue.admin.jobs import TASK_CHARS
from django_sqlqueue.db import recurrence
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.exceptions import SQLQueueError
from django_sqlqueue.models import Schedule

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
    "next_tick",
    "last_run",
    "last_job",
)


class ScheduleAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Every recurring job, with its next and last run."""

    # Narrow enough for a laptop beside the filter; each time's zone is in its exact time, on hover.
    list_display = ["key", "task_shown", "expression", "next_tick", "last_run", "last_job", "enabled"]
    list_filter = ["enabled"]
    search_fields = ["key", "task"]
    ordering = ["key"]
    fields = FIELDS
    readonly_fields = FIELDS
    actions = ["disable", "enable", "run_now"]

    class Media:
        css = {"all": ["django_sqlqueue/admin.css"]}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        return False

    def has_enable_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.enable_schedule")

    def has_run_now_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.run_schedule_now")

    @admin.display(description="task", ordering="task")
    def task_shown(self, schedule: Schedule) -> SafeString:
        return display.clipped(schedule.task, TASK_CHARS)

    @admin.display(description="next tick", ordering="next_tick_at")
    def next_tick(self, schedule: Schedule) -> SafeString | str:
        return times.when(schedule.next_tick_at, zone=schedule.tz)

    @admin.display(description="last run", ordering="last_run_at")
    def last_run(self, schedule: Schedule) -> SafeString | str:
        return "never" if schedule.last_run_at is None else times.when(schedule.last_run_at, zone=schedule.tz)

    @admin.display(description="last job")
    def last_job(self, schedule: Schedule) -> SafeString | str:
        if schedule.last_job_id is None:
            return "-"
        url = reverse("admin:django_sqlqueue_job_change", args=[schedule.last_job_id])
        return format_html('<a href="{}">#{}</a>', url, schedule.last_job_id)

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
        except SQLQueueError as error:
            self.message_user(request, f"Nothing was enqueued: {error}", messages.ERROR)
            return
        shown = ", ".join(f"#{job.pk}" for job in jobs)
        self.message_user(request, f"Enqueued {len(jobs)} job(s): {shown}.", messages.SUCCESS)
