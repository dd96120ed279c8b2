"""Registers the job and worker admins (built in ``jobs`` and ``workers``)."""

from __future__ import annotations

from django.contrib import admin

from django_sqlqueue.admin.jobs import JobAdmin
from django_sqlqueue.admin.workers import WorkerAdmin
from django_sqlqueue.models import Job, Worker

admin.site.register(Job, JobAdmin)
admin.site.register(Worker, WorkerAdmin)
