"""A task's own backoff, in the shape Django's retry proposal gives it: a callable that
takes the exception and the failed attempt, and returns how long to wait before the next
attempt (seconds or a timedelta), or None for no more retries. Checked when the task is
registered; asked by ``rules.failures`` when an attempt with attempts left has failed."""

from __future__ import annotations

import datetime
import inspect
from collections.abc import Callable
from typing import Any

from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.rules.validation import delay_problem

#: ``backoff(exception, failed)``: ``failed`` is the job (for ``@job``) or its ``TaskResult``
#: (for Django's ``@task``) as the failed attempt left it, its error last in ``errors``.
Backoff = Callable[[BaseException, Any], "float | datetime.timedelta | None"]


def backoff_problem(backoff: Any) -> str | None:
    """Why ``backoff`` cannot be a task's backoff, or None: it must be callable with two
    positional arguments (the exception and the failed attempt)."""
    if backoff is None:
        return None
    if not callable(backoff):
        return f"backoff must be a callable taking (exception, task_result), not {type(backoff).__name__}"
    try:
        signature = inspect.signature(backoff)
    except (TypeError, ValueError):
        return None  # some builtins hide their signature: trusted, and a bad call is caught when it runs
    try:
        signature.bind(None, None)
    except TypeError as error:
        return f"backoff {getattr(backoff, '__qualname__', backoff)!r} cannot take (exception, task_result): {error}"
    return None


def asked_delay(backoff: Backoff, error: BaseException, failed: Any, task: str) -> datetime.timedelta | None:
    """What ``backoff`` asks of the attempt of ``task`` that raised ``error``: the delay
    before the next attempt, or None for no more retries.

    Raises ``InvalidJobError`` saying why when the backoff raised (its exception the
    cause) or returned what is no delay: such an attempt fails for good with that error,
    and nothing reaches the worker that asked."""
    try:
        delay = backoff(error, failed)
    except Exception as problem:
        if problem.__context__ is None:
            problem.__context__ = error
        raise InvalidJobError(
            f"{task}: its backoff raised {type(problem).__qualname__} deciding the retry after "
            f"{type(error).__qualname__}; no retry"
        ) from problem
    if delay is None:
        return None
    if wrong := delay_problem(delay):
        invalid = InvalidJobError(f"{task}: its backoff returned no delay ({wrong}, or None); no retry")
        invalid.__context__ = error
        raise invalid
    return delay if isinstance(delay, datetime.timedelta) else datetime.timedelta(seconds=delay)
