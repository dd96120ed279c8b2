"""Keys derived from a job's arguments, by ``@job(unique=("order_id",))`` and
``@job(concurrency=("tenant_id",), concurrency_limit=n)``: one derivation for both."""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.rules.limits import CONCURRENCY_KEY_MAX_LENGTH, UNIQUE_KEY_MAX_LENGTH

if TYPE_CHECKING:
    from django_sqlqueue.rules.registry import RegisteredTask


def derived_key(
    task: RegisteredTask, names: Sequence[str], args: Any, kwargs: Any, *, what: str, scope: str, max_length: int
) -> str:
    """``task``'s name and ``scope``, then the values of the arguments ``names`` (as
    passed, or by default) as JSON, so that two tasks never share a key by accident; a
    SHA-256 of all that when it is longer than ``max_length``. ``what`` names the key
    in the ``InvalidJobError`` raised when the arguments do not fit the function."""
    try:
        bound = inspect.signature(task.func).bind(*args, **kwargs)
        bound.apply_defaults()
        values = {name: bound.arguments[name] for name in names}
        shown = json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise InvalidJobError(f"Cannot derive the {what} of {task.name}: {error}.") from None
    key = f"{task.name}{scope}:{shown}"
    if len(key) <= max_length:
        return key
    return f"sha256:{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"


def unique_key(task: RegisteredTask, args: Sequence[Any], kwargs: Mapping[str, Any], queue: str) -> str | None:
    """The key ``@job(unique=(...))`` derives (with the queue, ``@queue``, when
    ``unique_queue=True``); None for a task without ``unique``."""
    if task.unique is None:
        return None
    scope = f"@{queue}" if task.unique_queue else ""
    return derived_key(
        task, task.unique, args, kwargs, what="unique_key", scope=scope, max_length=UNIQUE_KEY_MAX_LENGTH
    )


def concurrency_slot(
    task: RegisteredTask, args: Any, kwargs: Any, *, key: str | None, limit: int | None
) -> tuple[str | None, int | None]:
    """A job's concurrency key and limit: those given to ``enqueue``, else the task's.

    With a limit and no names, the key is the task's name: a limit on the task as a whole."""
    limit = task.concurrency_limit if limit is None else limit
    if key is not None or limit is None:
        return key, limit
    if not task.concurrency:
        return task.name, limit
    derived = derived_key(
        task,
        task.concurrency,
        args,
        kwargs,
        what="concurrency key",
        scope="",
        max_length=CONCURRENCY_KEY_MAX_LENGTH,
    )
    return derived, limit


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
