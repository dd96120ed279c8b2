"""The shop's receivers of the queue's job signals."""

from __future__ import annotations

import logging
from typing import Any

from django_sqlqueue.models import Job

logger = logging.getLogger(__name__)

SLOW_SECONDS = 10.0


def log_slow_job(
    sender: Any, *, job: Job, outcome: str, duration: float, **kwargs: Any
) -> None:
    """Sent in the worker, in the job's thread, after each attempt."""
    if duration > SLOW_SECONDS:
        logger.warning(
            "Job %s (%s) %s after %.1f s", job.pk, job.task, outcome, duration
        )


def alert_on_failure(
    sender: Any, *, job: Job, error: Exception, **kwargs: Any
) -> None:
    """Sent once a job failed for good, after its FAILED status is committed."""
    logger.error("Job %s (%s) failed for good: %r", job.pk, job.task, error)
