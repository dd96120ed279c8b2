"""Argument types the app's commands share: argparse calls them, and their
``ArgumentTypeError`` becomes a usage error that names the option."""

from __future__ import annotations

import argparse
import datetime
import math
import re

from django_sqlqueue.conf import DEFAULT_RETENTION, MAX_CLAIM_LIMIT, MAX_RETENTION
from django_sqlqueue.rules.lifecycle import JobStatus
from django_sqlqueue.rules.queues import queue_name_problem
from django_sqlqueue.runner.naming import name_prefix_problem

_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    return _whole_number(text, minimum=1)


def non_negative_int(text: str) -> int:
    """A whole number of at least 0."""
    return _whole_number(text, minimum=0)


def positive_number(text: str) -> float:
    """A finite number above 0, such as a number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text} is not a number above 0")
    return value


def _whole_number(text: str, *, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
    return value


def tcp_port(text: str) -> int:
    """A TCP port number, from 1 to 65535."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is more than 65535, the highest port")
    return value


def percent(text: str) -> int:
    """A whole percentage, from 1 to 100."""
    value = positive_int(text)
    if value > 100:
        raise argparse.ArgumentTypeError(f"{value} is more than 100")
    return value


def claim_limit(text: str) -> int:
    """How many jobs one claim takes: a whole number from 1 to ``MAX_CLAIM_LIMIT``."""
    value = positive_int(text)
    if value > MAX_CLAIM_LIMIT:
        raise argparse.ArgumentTypeError(f"{value} is more than {MAX_CLAIM_LIMIT}, the most one claim takes")
    return value


def queue_name(text: str) -> str:
    """One name a queue may have."""
    if problem := queue_name_problem(text):
        raise argparse.ArgumentTypeError(problem)
    return text


def name_prefix(text: str) -> str:
    """A prefix for the worker names (``runworkers --name``) short enough for their columns."""
    if problem := name_prefix_problem(text):
        raise argparse.ArgumentTypeError(problem)
    return text


def queue_list(text: str) -> list[str]:
    """Comma-separated queue names, each one a queue may have."""
    return [queue_name(name.strip()) for name in text.split(",")]


def duration(text: str) -> datetime.timedelta:
    """A length of time from 0 up to a century: seconds, or a number with a unit such as
    ``30m``, ``12h``, ``7d`` or ``2w``."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 3600, 30m, 12h or 7d")
    seconds = float(match[1]) * _UNITS[match[2]]
    if seconds > MAX_RETENTION.total_seconds():
        raise argparse.ArgumentTypeError(f"{text} is more than {MAX_RETENTION.days} days")
    return datetime.timedelta(seconds=seconds)


def finished_statuses(text: str) -> list[JobStatus]:
    """Comma-separated finished statuses: SUCCESSFUL, FAILED, CANCELLED (any case)."""
    statuses = []
    for name in text.split(","):
        if name.strip().upper() not in DEFAULT_RETENTION:
            raise argparse.ArgumentTypeError(
                f"{name.strip()!r} is not a finished status; use {', '.join(DEFAULT_RETENTION)}"
            )
        statuses.append(JobStatus(name.strip().upper()))
    return statuses
