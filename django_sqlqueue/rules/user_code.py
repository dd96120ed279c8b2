"""Calling user code (an enqueue hook, a signal's receiver, a maintenance service's turn)
from a place that must go on whatever it raises: the runner's worker processes and its
supervisor. What it raises is logged with its traceback, naming what raised, and the
caller decides what is left to do (enqueue the job without the hook's changes, try the
service again at its next turn); a worker or the supervisor's loop never dies of it."""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)


@dataclass
class Contained:
    """What :func:`contained` caught: the exception the block raised, or None."""

    error: Exception | None = None


@contextlib.contextmanager
def contained(what: str, *args: Any, then: str) -> Iterator[Contained]:
    """Run the block; an ``Exception`` it raises is logged at error level with its
    traceback, as "``what % args`` raised: ``then``", and kept on the yielded
    :class:`Contained` instead of going on up. ``what`` is formatted only then."""
    caught = Contained()
    try:
        yield caught
    except Exception as error:
        caught.error = error
        logger.error("%s raised: %s", what % args if args else what, then, exc_info=error)


#: Whether the enqueues made now are the runner's own (:func:`runner_enqueues`).
_RUNNER_ENQUEUES: contextvars.ContextVar[bool] = contextvars.ContextVar("sqlqueue_runner_enqueues", default=False)


@contextlib.contextmanager
def runner_enqueues() -> Iterator[None]:
    """Inside the block, the jobs enqueued are the runner's own (a batch's callbacks, a
    schedule's ticks), in a transaction that writes what is already due (a batch's
    finishes, a tick's compare-and-set): an enqueue hook that raises on one of them is
    logged, and the job is enqueued without that hook's changes, rather than the
    exception rolling that back and killing the worker or the supervisor's sweep."""
    token = _RUNNER_ENQUEUES.set(True)
    try:
        yield
    finally:
        _RUNNER_ENQUEUES.reset(token)


def runner_enqueueing() -> bool:
    """Whether the code runs inside :func:`runner_enqueues`."""
    return _RUNNER_ENQUEUES.get()


def name_of(call: object) -> str:
    """A callable's dotted path, as a setting names it (its repr when it has none)."""
    module, qualname = getattr(call, "__module__", None), getattr(call, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(call)
