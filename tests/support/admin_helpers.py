"""Jobs in every status and staff users with chosen permissions, for the admin's tests."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission
from django.test import Client

from django_sqlqueue.models import Job, JobStatus
from tests.testapp.tasks import noop

CHANGELIST = "/admin/django_sqlqueue/job/"


def make_job(status: str = JobStatus.READY, *, errors: int = 0, **fields: Any) -> Job:
    """A job in ``status`` with ``errors`` failed attempts recorded, and any other columns set."""
    job = Job.objects.enqueue(noop, fields.pop("args", ()), queue=fields.pop("queue", None))
    history = [
        {
            "attempt": n,
            "worker": "w1",
            "started_at": None,
            "exception_class_path": "builtins.RuntimeError",
            "message": f"boom {n}",
            "traceback": f"Traceback (most recent call last):\nRuntimeError: boom {n}\n",
        }
        for n in range(1, errors + 1)
    ]
    last_error_class = "builtins.RuntimeError" if errors else ""
    Job.objects.filter(pk=job.pk).update(
        status=status, errors=history, attempts=errors, **{"last_error_class": last_error_class, **fields}
    )
    job.refresh_from_db()
    return job


def staff_client(django_user_model: Any, *codenames: str, username: str = "staff") -> Client:
    """A client logged in as staff holding only the ``django_sqlqueue`` permissions named."""
    user = django_user_model.objects.create_user(username, password="x", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="django_sqlqueue", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return client


def action(client: Client, name: str, jobs: list[Job], query: str = "", **extra: str) -> Any:
    """POST the changelist action ``name`` on ``jobs``."""
    data = {"action": name, "index": "0", "_selected_action": [str(job.pk) for job in jobs], **extra}
    return client.post(CHANGELIST + query, data)


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]] if response.context else []
