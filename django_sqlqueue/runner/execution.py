"""Running one claimed job in a worker: a ``@job`` function is called with the job's
arguments; a Django task also gets its context, and has Django's ``task_started`` and
``task_finished`` sent around it; either runs to its end if it is a coroutine function.
Our own ``job_started`` and ``job_finished`` are sent around every job."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, cast

from asgiref.sync import async_to_sync
from django.db import DatabaseError, connections

from django_sqlqueue import signals
from django_sqlqueue.db.finishing import Ended
from django_sqlqueue.exceptions import TransactionLeftOpen
from django_sqlqueue.models import Job
from django_sqlqueue.rules.failures import Failure, attempt_number, error_message
from django_sqlqueue.rules.lifecycle import FAIL, RETRY, SNOOZE, STOP, SUCCEED
from django_sqlqueue.rules.registry import get_task
from django_sqlqueue.runner import current
from django_sqlqueue.runner.completion import completed, run_atomically

logger = logging.getLogger(__name__)


class JobOutcome(NamedTuple):
    """What became of one claimed job in a worker, to be written with its batch."""

    job: Job
    #: The task's return value; None when it raised or never started.
    result: Any = None
    #: What the task raised; None when it returned or never started.
    error: BaseException | None = None
    #: False for a job the worker gave back unstarted because it was stopping.
    started: bool = True
    #: What its failed attempt becomes, decided once, as the finisher will write it.
    failure: Failure | None = None
    #: The success the task committed with its writes (``runner/completion.py``): the
    #: worker writes nothing more for it.
    written: Ended | None = None


def attempt(job: Job, worker_id: str, through: Through | None = None) -> JobOutcome:
    """Run ``job`` in ``worker_id`` with ``job_started`` and ``job_finished`` sent around
    it, ``current_job()`` giving its handle meanwhile, and logs the attempt (at the level
    of :data:`LOG_LEVELS`, with the fields of :func:`job_fields` as the record's extras).
    ``through`` is the worker's middleware chain (``runner.middleware``), if any.
    Whatever the task raises is its outcome, never the worker's: its failure is decided
    once an attempt, on its handle (``current.JobHandle.decision``), for the finisher to write."""
    with current.JobHandle(job, worker_id) as handle:
        signals.send(signals.job_started, Job, job, job=job)
        began = time.perf_counter()
        try:
            value = run(job, worker_id) if through is None else through(job)
            outcome = JobOutcome(job, result=value)
        except Exception as error:
            # Decided once an attempt: a Django task's backend or a middleware may have.
            failure = handle.decision(error)
            outcome = JobOutcome(job, error=error, failure=failure)
        if handle.completion_written and (ended := completed(handle)) is not None:
            outcome = _completed(outcome, ended)
        duration = time.perf_counter() - began
        result = SUCCEED.outcome if outcome.failure is None else outcome.failure.transition.outcome
        level, said = LOG_LEVELS[result], _SAID[result]
        if logger.isEnabledFor(level):  # its fields cost more than a no-op job
            logger.log(
                level,
                f"Job %s (%s) attempt %s {said}%s",
                job.pk,
                job.task,
                _attempt_shown(job),
                duration,
                "" if outcome.error is None else f": {type(outcome.error).__name__}: {error_message(outcome.error)}",
                extra=job_fields(job, result, duration),
            )
        signals.send(
            signals.job_finished,
            Job,
            job,
            job=job,
            result=outcome.result,
            error=outcome.error,
            outcome=result,
            duration=duration,
        )
    return outcome


#: The level an attempt is logged at, by its outcome (``rules.lifecycle.OUTCOMES``): a
#: failure shows at ``runworkers``' default verbosity (WARNING), and a job that fails for
#: good stands out (ERROR).
LOG_LEVELS = {
    SUCCEED.outcome: logging.INFO,
    RETRY.outcome: logging.WARNING,
    FAIL.outcome: logging.ERROR,
    STOP.outcome: logging.INFO,
    SNOOZE.outcome: logging.INFO,
}
#: What the log line says of each outcome, with the attempt's run time.
_SAID = {
    SUCCEED.outcome: "succeeded in %.3f s",
    RETRY.outcome: "failed after %.3f s and will be retried",
    FAIL.outcome: "failed after %.3f s, its last attempt; the job is FAILED",
    STOP.outcome: "was cancelled after %.3f s",
    SNOOZE.outcome: "snoozed after %.3f s, its attempt not counted",
}


def _completed(outcome: JobOutcome, ended: Ended) -> JobOutcome:
    """The outcome of an attempt whose task committed its job's success itself: a task
    that raised after that commit leaves its job ``SUCCESSFUL``, and its error logged."""
    if outcome.error is not None:
        logger.warning(
            "Job %s (%s) raised %s after its completion was committed: it stays %s",
            ended.job.pk,
            ended.job.task,
            type(outcome.error).__name__,
            ended.status.label,
        )
    return JobOutcome(outcome.job, result=ended.result, written=ended)


def _attempt_shown(job: Job) -> str:
    """``2/3``: the attempt's number, as the job's page numbers it, of those allowed; after
    an admin Retry, which gives the job a new count, ``4 (1/3 since its retry)``."""
    number = attempt_number(job)
    if number == job.attempts:
        return f"{number}/{job.max_attempts}"
    return f"{number} ({job.attempts}/{job.max_attempts} since its retry)"


def job_fields(job: Job, outcome: str, duration: float) -> dict[str, Any]:
    """The fields of a finished attempt's log record, which the JSON log format writes."""
    return {
        "job_id": job.pk,
        "task": job.task,
        "queue": job.queue,
        "attempt": attempt_number(job),
        "outcome": outcome,
        "duration": round(duration, 6),
    }


def run(job: Job, worker_id: str) -> Any:
    """Run a claimed job's task in ``worker_id``: its return value, or the exception it
    raised. Raises ``UnknownTaskError`` for a job naming no registered task.

    A Django task that raises has its failure decided to tell Django's ``task_finished``
    what will be written: on the attempt's ``current_job()`` handle
    (``JobHandle.decision``), which keeps it for the runner."""
    registered = get_task(job.task)
    if registered.django_task is None:
        func = registered.func
        if registered.is_coroutine:
            # As Django's Task.call runs one: in an event loop of its own, in this thread's
            # context (current_job()), its sync_to_async calls back on this thread and its
            # connections.
            func = async_to_sync(func)
        if registered.atomic:
            return run_atomically(job, lambda: call(func, *job.args, **job.kwargs))
        return call(func, *job.args, **job.kwargs)
    backend = cast(TaskBackend, registered.django_task.get_backend())
    return backend.run_job(registered.django_task, job, worker_id)


def call(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)``, then close each of this thread's connections the task
    left with autocommit off (``set_autocommit(False)`` not undone), which rolls back
    what it wrote since its last ``commit()``; raise ``TransactionLeftOpen`` naming them
    if it returned (what it raised stays its error).

    Left so, the connection would be closed by the worker's ``close_old_connections()``
    all the same, its writes lost while the job succeeded. Connections inside an atomic
    block (a test's, around ``django_sqlqueue.testing``) are not the task's to leave."""
    try:
        value = func(*args, **kwargs)
    except BaseException:
        _close_left_open()
        raise
    if left_open := _close_left_open():
        raise TransactionLeftOpen(
            f"the task returned with autocommit off on database {', '.join(map(repr, left_open))} "
            "(set_autocommit(False) not undone): what it wrote since its last commit() was rolled back. "
            "Use transaction.atomic(), or commit() and set_autocommit(True) before returning."
        )
    return value


def _close_left_open() -> list[str]:
    closed = []
    for connection in connections.all(initialized_only=True):
        # ``autocommit`` as Django keeps it: ``get_autocommit()`` would check the connection.
        if (
            not connection.autocommit
            and connection.connection is not None
            and not connection.in_atomic_block
            and connection.settings_dict["AUTOCOMMIT"]
        ):
            with contextlib.suppress(DatabaseError):  # closed all the same: the server rolls back
                connection.close()
            closed.append(connection.alias)
    return closed


class Through(Protocol):
    """The middleware chain a worker builds once (``runner.middleware.Chain``): it runs
    a job through :func:`run`."""

    def __call__(self, job: Job) -> Any: ...


class TaskBackend(Protocol):
    """What the runner asks of a Django task's backend (``SQLQueueBackend``, which
    registered the task): to run the task of a claimed job, with Django's task signals
    around it. Asked of the task's own backend, so that the runner never imports the
    Tasks adapter, which depends on it."""

    def run_job(self, task: Any, job: Job, worker_id: str) -> Any:
        """The task's return value, as :func:`run` returns it; a failure it decides (to
        tell ``task_finished``) is kept on the attempt's ``current_job()`` handle."""
