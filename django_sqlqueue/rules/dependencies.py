"""Workflows' rules, without a query: what ``after=`` and ``after_failure=`` accept, and
whether the finished jobs a job waits for stop it (and why, in words)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django_sqlqueue.rules.lifecycle import JobStatus

#: What ``after_failure=`` takes: cancel the job when one it waits for fails (the
#: default), or run it all the same (a clean-up step).
AFTER_FAILURE = ("cancel", "run")
#: The ends of a job that stop the jobs waiting for it; "" stands for a deleted job.
BLOCKING = (JobStatus.FAILED, JobStatus.CANCELLED, "")


def parent_id_problem(value: Any) -> str | None:
    """Why ``value`` is no job id ``after=`` can hold, or None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"holds {value!r:.100}, which is neither a saved job nor a job id"
    if value < 1:
        return f"holds {value}, which no job has as its id"
    return None


def after_failure_problem(value: Any) -> str | None:
    """Why ``value`` is no ``after_failure=``, or None."""
    if value not in AFTER_FAILURE:
        return f"after_failure must be one of {', '.join(map(repr, AFTER_FAILURE))}, not {value!r:.100}"
    return None


def blocked_reason(finished: Mapping[int, str]) -> str | None:
    """Why the jobs ``finished`` (id to status, "" for deleted) stop a job that waits
    for them, naming the first that does; None when none does."""
    for parent, status in sorted(finished.items()):
        if status in BLOCKING:
            ended = "was deleted" if status == "" else f"ended {status}"
            return f"Cancelled without running: job {parent}, which it waits for, {ended}."
    return None


_BLOCKED_BY = re.compile(r"Cancelled without running: job (\d+), which it waits for, ")


def stopped_by(reason: str) -> int | None:
    """The job a reason of :func:`blocked_reason` names, or None for any other text: a
    job deleted since is known to have stopped the job cancelled with that reason."""
    found = _BLOCKED_BY.match(reason)
    return int(found.group(1)) if found else None
