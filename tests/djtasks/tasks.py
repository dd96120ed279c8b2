"""Django Tasks the tests enqueue; as an installed app's ``tasks.py``, a worker imports
them (and registers them) at start-up. They come through ``tasks_compat`` only so that
one module serves Django 5.2 and 6.x; a project imports from ``django.tasks``."""

from __future__ import annotations

import types
from typing import Any

from django_sqlqueue import current_job
from django_sqlqueue.backends import SQLQueueTask
from django_sqlqueue.backends.compat import TaskContext, task
from django_sqlqueue.exceptions import Snooze


@task
def add(a: int, b: int) -> int:
    """A task with a result."""
    return a + b


@task(priority=10, queue_name="reports")
def fail(message: str) -> None:
    """A task that always raises."""
    raise ValueError(message)


@task(takes_context=True)
def whoami(context: TaskContext[Any, Any], label: str) -> dict[str, Any]:
    """What the context tells a task about its run."""
    return {"label": label, "attempt": context.attempt, "status": context.task_result.status}


@task
async def async_double(value: int) -> tuple[int, int]:
    """A coroutine function; its tuple comes back as a list, as from JSON."""
    return value, value * 2


@task
def current_job_id() -> int | None:
    """The id ``current_job()`` gives inside a Django task."""
    handle = current_job()
    return None if handle is None else handle.id


@task
async def current_job_id_async() -> int | None:
    """The same from a coroutine function."""
    handle = current_job()
    return None if handle is None else handle.id


@task
def snooze_for(seconds: float) -> None:
    """A Django task that snoozes every time."""
    raise Snooze(seconds)


def snooze_at_most_never(seconds: float) -> None:
    """Made a task by a test, with ``@task(max_snoozes=0)`` (Django 6.0's ``@task`` takes no options)."""
    raise Snooze(seconds)


def record_atomically(token: str) -> str:
    """Made a task by a test, with ``@task(atomic=True)`` (Django's own backends refuse
    the option, and this module runs on them too): inserts the token's receipt, committed
    with the job's success; then raises for a token starting with ``fail``, which rolls
    the receipt back."""
    from tests.testapp.models import Receipt

    Receipt.objects.create(token=token)
    if token.startswith("fail"):
        raise ValueError(token)
    return token


def retried_backoff(exception: BaseException, task_result: Any) -> float | None:
    """The retry proposal's backoff: no retry after a ``PermissionError``, else at once, but
    only while the failed attempt's result says it is ``FAILED`` with its error last."""
    if isinstance(exception, PermissionError):
        return None
    assert task_result.status == "FAILED"
    assert task_result.errors[-1].exception_class_path.endswith("ValueError")
    return 0


def raising_backoff(exception: BaseException, task_result: Any) -> float | None:
    """A backoff with a bug."""
    raise KeyError("no such policy")


def succeed_on_attempt(context: TaskContext[Any, Any], succeeding: int, error: str = "ValueError") -> int:
    """Raises ``error`` until attempt ``succeeding``, then returns the attempt."""
    if context.attempt < succeeding:
        raise {"ValueError": ValueError, "PermissionError": PermissionError}[error](f"attempt {context.attempt}")
    return context.attempt


def _retried(backoff: Any) -> SQLQueueTask:
    # Made directly: Django 6.0's @task passes no options on (6.1 and the backport take
    # @task(max_attempts=5, backoff=...)); a copy of the function per backoff, as a
    # function is registered once.
    func = types.FunctionType(
        succeed_on_attempt.__code__, globals(), f"retried_{backoff.__name__}", succeed_on_attempt.__defaults__
    )
    func.__qualname__ = func.__name__
    return SQLQueueTask(
        func=func,
        backend="default",
        queue_name="default",
        priority=0,
        run_after=None,
        takes_context=True,
        max_attempts=5,
        backoff=backoff,
    )


#: ``succeed_on_attempt`` with up to 5 attempts, retried as its backoff says.
retried_retried_backoff = _retried(retried_backoff)
retried_raising_backoff = _retried(raising_backoff)


@task(takes_context=True)
def note_metadata(context: TaskContext[Any, Any], key: str, value: Any, fail: bool = False) -> None:
    """Sets ``context.metadata[key]`` (Django's metadata API, in its development
    version), then raises when asked to."""
    context.metadata[key] = value  # type: ignore[attr-defined]
    if fail:
        raise ValueError("after noting")
