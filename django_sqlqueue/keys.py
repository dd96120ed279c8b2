"""Concurrency keys derived from a job's arguments (``@job(concurrency=("tenant_id",))``)."""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django_sqlqueue.db.concurrency import CONCURRENCY_KEY_MAX_LENGTH
from django_sqlqueue.exceptions import InvalidJobError

if TYPE_CHECKING:
    from django_sqlqueue.registry import RegisteredTask


def concurrency_slot(
    task: RegisteredTask, args: Any, kwargs: Any, *, key: str | None, limit: int | None
) -> tuple[str | None, int | None]:
    """A job's concurrency key and limit: those given to ``enqueue``, else the task's.

    A task's key is its name, followed by the JSON of the arguments ``@job(concurrency=…)``
    names (so two tasks never share a key by accident); a key longer than the column is
    replaced by its SHA-256. With a limit and no names, the key is the task's name: a
    limit on the task as a whole."""
    limit = task.concurrency_limit if limit is None else limit
    if key is not None or limit is None:
        return key, limit
    if not task.concurrency:
        return task.name, limit
    try:
        bound = inspect.signature(task.func).bind(*args, **kwargs)
        bound.apply_defaults()
        values = json.dumps([bound.arguments[name] for name in task.concurrency], sort_keys=True)
    except (TypeError, ValueError) as error:
        raise InvalidJobError(f"Cannot derive the concurrency key of {task.name}: {error}.") from error
    key = f"{task.name}:{values}"
    if len(key) > CONCURRENCY_KEY_MAX_LENGTH:
        key = f"sha256:{hashlib.sha256(key.encode()).hexdigest()}"
    return key, limit


def concurrency_names_problem(func: Any, names: Sequence[str] | None, limit: Any) -> str | None:
    """Why ``@job(concurrency=names, concurrency_limit=limit)`` cannot derive keys, or None."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(name, str) for name in names):
        return f"concurrency must be a tuple of argument names, not {names!r}"
    if limit is None:
        return "concurrency needs a concurrency_limit"
    parameters = inspect.signature(func).parameters
    if unknown := [name for name in names if name not in parameters]:
        return f"concurrency names {unknown}, which are not arguments of the function"
    return None
