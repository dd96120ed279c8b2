from __future__ import annotations

from django.db import models


class JobStatus(models.TextChoices):
    """A job's place in its life; the names match Django Tasks' ``TaskResultStatus``.

    ``READY`` also holds a failed attempt waiting for its retry (its ``run_at`` is later
    and its error is kept); ``FAILED`` is final and waits for a human in the admin."""

    READY = "READY", "Ready"
    RUNNING = "RUNNING", "Running"
    SUCCESSFUL = "SUCCESSFUL", "Successful"
    FAILED = "FAILED", "Failed"
    CANCELLED = "CANCELLED", "Cancelled"
