"""Running one claimed job in a worker: a ``@job`` function is called with the job's
arguments; a Django task also gets its context, and has Django's ``task_started`` and
``task_finished`` sent around it; either runs to its end if it is a coroutine function.
Our own ``job_started`` and ``job_finished`` are sent around every job."""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from asgiref.sync import async_to_sync, iscoroutinefunction
from django.db import DatabaseError, connections
from django.dispatch import Signal
from django.utils.timezone import now

from django_sqlqueue import current, signals
from django_sqlqueue.db.finishing import Failure, after_failure, decide, error_message
from django_sqlqueue.exceptions import TransactionLeftOpen
from django_sqlqueue.models import Job
from django_sqlqueue.registry import get_task
from django_sqlqueue.rules.lifecycle import FAIL, RETRY, STOP, SUCCEED

if TYPE_CHECKING:
    from django_sqlqueue.tasks_compat import Task, TaskResult

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


def attempt(job: Job, worker_id: str) -> JobOutcome:
    """Run ``job`` in ``worker_id`` with ``job_started`` and ``job_finished`` sent around
    it, ``current_job()`` giving its handle meanwhile, and logs the attempt (at the level
    of :data:`LOG_LEVELS`, with the fields of :func:`job_fields` as the record's extras).
    Whatever the task raises is its outcome, never the worker's: its failure is decided
    here, once (:func:`~django_sqlqueue.db.finishing.decide`), for the finisher to write."""
    with current.JobHandle(job, worker_id):
        _send(signals.job_started, Job, job, job=job)
        began = time.perf_counter()
        decided: list[Failure] = []
        try:
            outcome = JobOutcome(job, result=run(job, worker_id, decided=decided))
        except Exception as error:
            # A Django task's failure was decided as its signal was sent: not twice.
            failure = decided[0] if decided and decided[0].error is error else decide(job, error, worker_id)
            outcome = JobOutcome(job, error=error, failure=failure)
        duration = time.perf_counter() - began
        result = SUCCEED.outcome if outcome.failure is None else outcome.failure.transition.outcome
        level, said = LOG_LEVELS[result], _SAID[result]
        if logger.isEnabledFor(level):  # its fields cost more than a no-op job
            logger.log(
                level,
                f"Job %s (%s) attempt %s/%s {said}%s",
                job.pk,
                job.task,
                job.attempts,
                job.max_attempts,
                duration,
                "" if outcome.error is None else f": {type(outcome.error).__name__}: {error_message(outcome.error)}",
                extra=job_fields(job, result, duration),
            )
        _send(
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
}
#: What the log line says of each outcome, with the attempt's run time.
_SAID = {
    SUCCEED.outcome: "succeeded in %.3f s",
    RETRY.outcome: "failed after %.3f s and will be retried",
    FAIL.outcome: "failed after %.3f s, its last attempt; the job is FAILED",
    STOP.outcome: "was cancelled after %.3f s",
}


def job_fields(job: Job, outcome: str, duration: float) -> dict[str, Any]:
    """The fields of a finished attempt's log record, which the JSON log format writes."""
    return {
        "job_id": job.pk,
        "task": job.task,
        "queue": job.queue,
        "attempt": job.attempts,
        "outcome": outcome,
        "duration": round(duration, 6),
    }


def run(job: Job, worker_id: str, *, decided: list[Failure] | None = None) -> Any:
    """Run a claimed job's task in ``worker_id``: its return value, or the exception it
    raised. Raises ``UnknownTaskError`` for a job naming no registered task.

    A Django task that raises has its failure decided (:func:`decide`) to tell Django's
    ``task_finished`` what will be written: that decision is appended to ``decided``."""
    registered = get_task(job.task)
    if registered.django_task is None:
        func = registered.func
        if iscoroutinefunction(func):
            # As Django's Task.call runs one: in an event loop of its own, in this thread's
            # context (current_job()), its sync_to_async calls back on this thread and its
            # connections.
            func = async_to_sync(func)
        return _call(func, *job.args, **job.kwargs)
    return _run_django_task(registered.django_task, job, worker_id, [] if decided is None else decided)


def _call(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
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


class ResultsBackend(Protocol):
    """What the runner asks of a Django task's backend (``SQLQueueBackend``, which
    registered the task): a job as the task's ``TaskResult``. Asked of the task's
    backend, so that the runner never imports the Tasks adapter."""

    def job_result(self, job: Job, task: Task[..., Any]) -> TaskResult[..., Any]: ...


def _run_django_task(task: Task[..., Any], job: Job, worker_id: str, decided: list[Failure]) -> Any:
    # Imported here: only Django tasks need the Tasks framework, which Django 5.2 lacks
    # without the backport.
    from django_sqlqueue.tasks_compat import TaskContext, normalize_json, task_finished, task_started

    backend = cast(ResultsBackend, task.get_backend())

    def result_after(**outcome: Any) -> TaskResult[..., Any]:
        """The task's result once ``outcome`` is written: a little later, in a batch
        with other jobs' outcomes, by the database's clock."""
        finished = copy.copy(job)
        for name, value in outcome.items():
            setattr(finished, name, value)
        return backend.job_result(finished, task)

    sender = type(backend)
    running = backend.job_result(job, task)
    _send(task_started, sender, task.module_path, task_result=running)
    try:
        if task.takes_context:
            value = _call(task.call, TaskContext(task_result=running), *running.args, **running.kwargs)
        else:
            value = _call(task.call, *running.args, **running.kwargs)
        # What Django's own backends store: tuples become lists, for one.
        value = normalize_json(value)
    except Exception as error:
        failure = decide(job, error, worker_id)
        decided.append(failure)
        # Sent while the exception is handled, so that Django's task logger logs its traceback.
        _send(task_finished, sender, task.module_path, task_result=result_after(**after_failure(job, failure, now())))
        raise
    succeeded = result_after(status=SUCCEED.target, result=value, finished_at=now())
    _send(task_finished, sender, task.module_path, task_result=succeeded)
    return value


def _send(signal: Signal, sender: type[Any], about: object, **named: Any) -> None:
    """Send a signal around a job; a receiver's exception is logged, naming ``about``
    (made a string only then), and changes nothing about the job, whose outcome is the
    task's alone."""
    for receiver, response in signal.send_robust(sender, **named):
        if isinstance(response, Exception):
            logger.error("Receiver %r of %s raised", receiver, about, exc_info=response)
