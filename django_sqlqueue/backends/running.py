"""Running a Django task's job in a worker, for the runner (``runner.execution.TaskBackend``):
the task gets its context, and Django's ``task_started`` and ``task_finished`` are sent
around it with the ``TaskResult`` the job will have once its outcome is written, and the
metadata its task changed saved (``backends.metadata``)."""

from __future__ import annotations

import copy
from typing import Any

from django.utils.timezone import now

from django_sqlqueue.backends.compat import Task, TaskContext, TaskResult, normalize_json, task_finished, task_started
from django_sqlqueue.backends.metadata import save_modified
from django_sqlqueue.backends.results import job_result
from django_sqlqueue.db.finishing import after_failure
from django_sqlqueue.models import Job
from django_sqlqueue.rules.failures import decide
from django_sqlqueue.rules.lifecycle import SUCCEED
from django_sqlqueue.runner.completion import run_atomically
from django_sqlqueue.runner.current import current_job
from django_sqlqueue.runner.execution import call
from django_sqlqueue.signals import send


def run_task(task: Task[..., Any], job: Job, worker_id: str, *, backend: str, sender: type[Any]) -> Any:
    """Run ``job`` of ``task`` (registered by ``backend``, which ``sender`` names in the
    signals): its return value as Django's backends store it. A failure is decided
    once, on the attempt's ``current_job()`` handle (``JobHandle.decision``), so that the
    runner writes what ``task_finished`` said."""

    def result_after(**outcome: Any) -> TaskResult[..., Any]:
        """The task's result once ``outcome`` is written: a little later, in a batch
        with other jobs' outcomes, by the database's clock."""
        finished = copy.copy(job)
        for name, value in outcome.items():
            setattr(finished, name, value)
        return job_result(finished, task, backend=backend)

    def called() -> Any:
        if task.takes_context:
            context = TaskContext(task_result=running)
            try:
                value = call(task.call, context, *running.args, **running.kwargs)
            finally:
                # Kept whether the task returned or raised; metadata no database stores fails the attempt.
                save_modified(context)
        else:
            value = call(task.call, *running.args, **running.kwargs)
        # What Django's own backends store: tuples become lists, for one.
        return normalize_json(value)

    running = job_result(job, task, backend=backend)
    send(task_started, sender, task.module_path, task_result=running)
    try:
        # task_finished is sent once an atomic task's transaction has committed (or rolled back).
        value = run_atomically(job, called) if getattr(task, "atomic", False) else called()
    except Exception as error:
        handle = current_job()
        failure = decide(job, error, worker_id) if handle is None else handle.decision(error)
        # Sent while the exception is handled, so that Django's task logger logs its traceback.
        send(task_finished, sender, task.module_path, task_result=result_after(**after_failure(job, failure, now())))
        raise
    send(
        task_finished,
        sender,
        task.module_path,
        task_result=result_after(status=SUCCEED.target, result=value, finished_at=now()),
    )
    return value
