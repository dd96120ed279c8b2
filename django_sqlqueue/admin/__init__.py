"""Registers the job, schedule and worker admins (built in ``jobs``, ``schedules`` and ``workers``)."""

from __future__ import annotations

from django.contrib import admin

from django_sqlqueue.admin.jobs import JobAdmin
from django_sqlqueue.admin.schedules import ScheduleAdmin
from django_sqlqueue.admin.workers import WorkerAdmin
from django_sqlqueue.models import Job, Schedule, Worker

admin.site.register(Job, JobAdmin)
admin.site.register(Schedule, ScheduleAdmin)
admin.site.register(Worker, WorkerAdmin)
