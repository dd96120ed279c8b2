"""A job as Django's ``TaskResult``: what ``SQLQueueBackend.enqueue`` and
``get_result`` return, and what the task signals carry while a worker runs the job
(``backends/running``). Apart from the backend, so that running it needs no backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, ParamSpec, TypeVar

from django_sqlqueue.backends.compat import Task, TaskError, TaskResult, TaskResultStatus
from django_sqlqueue.backends.metadata import result_metadata
from django_sqlqueue.rules.lifecycle import TASK_RESULT_STATUS, JobStatus

if TYPE_CHECKING:
    from django_sqlqueue.models import Job

_P = ParamSpec("_P")
_R = TypeVar("_R")


def job_result(job: Job, task: Task[_P, _R], *, backend: str) -> TaskResult[_P, _R]:
    """``job`` as Django's ``TaskResult`` of ``task``.

    A cancelled job is ``FAILED`` (``rules.lifecycle.TASK_RESULT_STATUS``: Django has
    no such status, and it will not run again).
    ``worker_ids`` has the worker of each attempt of the job's life, so ``attempts``
    counts them across admin Retries: every attempt that ended without success left an
    error naming its worker, and a running or successful job's last attempt is its own.
    Its metadata (where Django has it) is the job's ``meta`` (``backends.metadata``)."""
    if (task.queue_name, task.priority) != (job.queue, job.priority):
        task = task.using(queue_name=job.queue, priority=job.priority)
    worker_ids = [error.get("worker") or "" for error in job.errors]
    if job.status in (JobStatus.RUNNING, JobStatus.SUCCESSFUL):
        worker_ids.append(job.worker)
    result = TaskResult(
        task=task,
        id=str(job.pk),
        status=TaskResultStatus(TASK_RESULT_STATUS[JobStatus(job.status)]),
        enqueued_at=job.enqueued_at,
        started_at=job.started_at,
        last_attempted_at=job.started_at,
        finished_at=job.finished_at,
        args=job.args,
        kwargs=job.kwargs,
        backend=backend,
        errors=[
            TaskError(exception_class_path=error["exception_class_path"], traceback=error["traceback"])
            for error in job.errors
        ],
        worker_ids=worker_ids,
        **result_metadata(job.meta),
    )
    # Django's own backends set the return value this way: it is not an init field.
    object.__setattr__(result, "_return_value", job.result)
    return result
