from __future__ import annotations

from django.db import models


class JobStatus(models.TextChoices):
    """A job's place in its life; the names match Django Tasks' ``TaskResultStatus``.

    ``READY`` also holds a failed attempt waiting for its retry (its ``run_at`` is later
    and its error is kept); ``FAILED`` is final and waits for a human in the admin."""

    #: Waiting to be claimed: now, or from its ``run_at`` on (a retry, a delayed job).
    READY = "READY", "Ready"
    #: Claimed by a worker, which holds it (``worker``) while its lease lasts.
    RUNNING = "RUNNING", "Running"
    #: Finished without an exception; its ``result`` is kept until pruned.
    SUCCESSFUL = "SUCCESSFUL", "Successful"
    #: Out of attempts (each raised, timed out or lost its worker): final, every error kept for the admin.
    FAILED = "FAILED", "Failed"
    #: Cancelled before it finished: final, never run again.
    CANCELLED = "CANCELLED", "Cancelled"
