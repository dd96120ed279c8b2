"""The rules a job must meet before it is written: plain JSON arguments and
options in range. Each function returns the problem in words, or None, so that the
decorator, ``enqueue`` and the system checks can all say exactly what is wrong."""

from __future__ import annotations

import math
from typing import Any

from django_sqlqueue.conf import conf, queue_name_problem

MIN_PRIORITY = -100
MAX_PRIORITY = 100


def json_problem(value: Any, where: str) -> str | None:
    """Why ``value`` would not come back from JSON as itself, or None.

    Only what round-trips exactly is accepted: a tuple is allowed (it comes back as
    a list, as every Python JSON user expects), but dict keys that are not strings,
    NaN and infinities, sets, bytes, datetimes and arbitrary objects are refused."""
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value!r}, which JSON cannot represent"
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            if problem := json_problem(item, f"{where}[{index}]"):
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has the key {key!r}: JSON object keys must be strings"
            if problem := json_problem(item, f"{where}[{key!r}]"):
                return problem
        return None
    kind = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    return f"{where} is a {kind}, which is not JSON: pass only None, bool, int, float, str, list and dict"


def job_options_problem(
    *,
    queue: Any = None,
    priority: Any = None,
    max_attempts: Any = None,
    timeout: Any = None,
) -> str | None:
    """Why these job options are out of range, or None; ``None`` values are not checked."""
    if queue is not None:
        if problem := queue_name_problem(queue):
            return problem
        allowed = conf.SQLQUEUE_QUEUES
        if allowed is not None and queue not in allowed:
            return f"queue {queue!r} is not one of SQLQUEUE_QUEUES {sorted(allowed)}"
    if priority is not None and (
        isinstance(priority, bool) or not isinstance(priority, int) or not MIN_PRIORITY <= priority <= MAX_PRIORITY
    ):
        return f"priority must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}, not {priority!r}"
    if max_attempts is not None and (
        isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1
    ):
        return f"max_attempts must be an integer of at least 1, not {max_attempts!r}"
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf
    ):
        return f"timeout must be a positive number of seconds or None, not {timeout!r}"
    return None


def arguments_problem(args: Any, kwargs: Any) -> str | None:
    """Why these call arguments cannot be stored, or None."""
    if not isinstance(args, (list, tuple)):
        return f"args must be a list or tuple, not {type(args).__name__}"
    if not isinstance(kwargs, dict):
        return f"kwargs must be a dict, not {type(kwargs).__name__}"
    return json_problem(list(args), "args") or json_problem(kwargs, "kwargs")
