"""Batches' rules, without a query: what a callback may be, which callbacks a finished
batch enqueues, and how each end of a job counts for its batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django_sqlqueue.exceptions import UnknownTaskError
from django_sqlqueue.rules.lifecycle import JobStatus
from django_sqlqueue.rules.registry import get_task
from django_sqlqueue.rules.validation import arguments_problem

#: The callbacks a batch takes, in the order a finished batch enqueues them.
CALLBACKS = ("on_success", "on_failure", "on_finish")
#: The keyword argument every callback receives: the batch's id, description and counts.
BATCH_ARGUMENT = "batch"
#: The longest description a batch keeps.
DESCRIPTION_MAX_LENGTH = 255


def callback_spec(when: str, value: Any) -> dict[str, Any]:
    """What a batch keeps of its ``when`` callback ``value``: a registered task (its
    function or name), or ``(task, args)``, or ``(task, args, kwargs)``, as
    ``{"task": name, "args": [...], "kwargs": {...}}``. Raises :class:`ValueError` saying
    why for anything else (a task not registered among them: ``UnknownTaskError``'s
    message), so that a batch never fails to enqueue its callbacks for a reason known
    when it was made."""
    task, args, kwargs = _parts(when, value)
    try:
        registered = get_task(task)
    except UnknownTaskError as error:
        raise ValueError(f"{when}: {error}") from None
    args = list(args) if isinstance(args, (list, tuple)) else args
    kwargs = dict(kwargs) if isinstance(kwargs, Mapping) else kwargs
    if problem := arguments_problem(args, kwargs):
        raise ValueError(f"{when} ({registered.name}): {problem}")
    if BATCH_ARGUMENT in kwargs:
        raise ValueError(f"{when} ({registered.name}): kwargs hold {BATCH_ARGUMENT!r}, which the batch passes itself")
    if problem := registered.binding_problem(args, {**kwargs, BATCH_ARGUMENT: {}}):
        raise ValueError(
            f"{when} ({registered.name}): {problem} (a callback is called with its arguments "
            f"and {BATCH_ARGUMENT}=, the batch's id and counts)"
        )
    return {"task": registered.name, "args": args, "kwargs": kwargs}


def _parts(when: str, value: Any) -> tuple[Callable[..., Any] | str, Any, Any]:
    if isinstance(value, str) or callable(value):
        return value, [], {}
    if isinstance(value, tuple) and len(value) in (2, 3):
        return value[0], value[1], value[2] if len(value) == 3 else {}
    raise ValueError(f"{when} must be a registered task, (task, args) or (task, args, kwargs), not {value!r:.100}")


def description_problem(value: Any) -> str | None:
    """Why ``value`` is no batch description, or None."""
    if not isinstance(value, str):
        return f"description must be a string, not {type(value).__name__}"
    if len(value) > DESCRIPTION_MAX_LENGTH:
        return f"description is {len(value)} characters long, more than {DESCRIPTION_MAX_LENGTH}"
    return None


def fires(when: str, failed: int) -> bool:
    """Whether a finished batch with ``failed`` jobs enqueues its ``when`` callback:
    ``on_finish`` always, ``on_success`` when none failed, ``on_failure`` when any did."""
    return when == "on_finish" or (when == "on_success") == (failed == 0)


#: The ends a batch counts as succeeded; every other end (``FAILED``, ``CANCELLED``,
#: expired among them, or a job deleted before it finished) counts as failed.
SUCCEEDED = (JobStatus.SUCCESSFUL,)
