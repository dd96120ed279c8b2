"""django-sqlqueue: a job queue in one SQL table."""

from __future__ import annotations

from django_sqlqueue.registry import job

__all__ = ["job"]
