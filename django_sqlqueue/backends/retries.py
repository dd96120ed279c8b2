"""A Django task's backoff as the registry calls it: the retry proposal's
``backoff(exception, task_result)`` (the task's own, else its backend's ``BACKOFF``),
given the failed job as its ``TaskResult``."""

from __future__ import annotations

import dataclasses
import datetime
from typing import TYPE_CHECKING, Any

from django_sqlqueue.backends.compat import Task
from django_sqlqueue.backends.results import job_result
from django_sqlqueue.rules import failures

if TYPE_CHECKING:
    from django_sqlqueue.models import Job


@dataclasses.dataclass(frozen=True)
class TaskBackoff:
    """The backoff of ``task``, called by ``rules.failures`` with the exception and the
    job as its failed attempt leaves it (``FAILED``, its error last), which the task's
    backoff reads as Django's ``TaskResult``: ``errors``, ``attempts`` and ``args`` as
    ``get_result`` gives them. Which backoff is looked up at each failure, so that the
    backend's ``BACKOFF`` is the one its settings name now; with none,
    ``SQLQUEUE_RETRY_BACKOFF``'s doubling (``rules.failures.retry_delay``)."""

    task: Task[..., Any]

    def __call__(self, error: BaseException, job: Job) -> float | datetime.timedelta | None:
        backoff = getattr(self.task, "backoff", None) or getattr(self.task.get_backend(), "backoff", None)
        if backoff is None:
            return failures.retry_delay(job.attempts)
        return backoff(error, job_result(job, self.task, backend=self.task.backend))  # type: ignore[no-any-return]
