"""Registers the job, batch, schedule and worker admins (built in ``jobs``, ``batches``,
``schedules`` and ``workers``), with their filters, displays, actions and the overview page.

It may import the figures (``stats``, ``counting``), the models, ``db/``, ``rules/``
and the root's settings and exceptions; never ``management/`` or ``runner/``."""

from __future__ import annotations

from django.contrib import admin

from django_sqlqueue.admin.batches import JobBatchAdmin
from django_sqlqueue.admin.jobs import JobAdmin
from django_sqlqueue.admin.schedules import ScheduleAdmin
from django_sqlqueue.admin.workers import WorkerAdmin
from django_sqlqueue.models import Job, JobBatch, Schedule, Worker

admin.site.register(Job, JobAdmin)
admin.site.register(JobBatch, JobBatchAdmin)
admin.site.register(Schedule, ScheduleAdmin)
admin.site.register(Worker, WorkerAdmin)
