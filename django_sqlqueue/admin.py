"""Registers the job and worker admins (built in ``admin_jobs`` and ``admin_workers``)."""

from __future__ import annotations

from django.contrib import admin

from django_sqlqueue.admin_jobs import JobAdmin
from django_sqlqueue.admin_workers import WorkerAdmin
from django_sqlqueue.models import Job, Worker

admin.site.register(Job, JobAdmin)
admin.site.register(Worker, WorkerAdmin)
