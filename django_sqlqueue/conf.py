"""The app's settings: one typed property each, read from ``django.conf.settings`` on
every access so that ``override_settings`` works, and validated where they are read
so that a bad value fails loudly (``checks.py`` turns the same errors into system
check errors at start-up)."""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

QUEUE_NAME_MAX_LENGTH = 100
#: ``max_attempts`` is an ``integer`` column on PostgreSQL (the smallest of the three).
MAX_ATTEMPTS = 2**31 - 1
#: The most jobs one claim may take: far more than a batch needs, few enough to hold
#: in memory and to pass to every database as a ``LIMIT``.
MAX_CLAIM_LIMIT = 100_000


def _read(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def _positive_number(name: str, default: float) -> float:
    value = _read(name, default)
    # An int past the largest float is below infinity, but not a number of seconds.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= sys.float_info.max:
        raise ImproperlyConfigured(f"{name} must be a positive number of seconds, not {value!r}.")
    return float(value)


def _positive_int(name: str, default: int, most: int) -> int:
    value = _read(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ImproperlyConfigured(f"{name} must be an integer of at least 1, not {value!r}.")
    if value > most:
        raise ImproperlyConfigured(f"{name} must be at most {most}, not {value!r}.")
    return value


def queue_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a queue, or None when it can."""
    if not isinstance(name, str) or not name:
        return f"a queue name must be a non-empty string, not {name!r}"
    if len(name) > QUEUE_NAME_MAX_LENGTH:
        return f"queue name {name!r} is longer than {QUEUE_NAME_MAX_LENGTH} characters"
    return None


class Settings:
    """Typed access to every ``SQLQUEUE_*`` setting, with its default."""

    @property
    def SQLQUEUE_QUEUES(self) -> frozenset[str] | None:
        """The queue names jobs may be enqueued on; ``None`` (the default) allows any."""
        value = _read("SQLQUEUE_QUEUES", None)
        if value is None:
            return None
        if isinstance(value, str) or not hasattr(value, "__iter__"):
            raise ImproperlyConfigured(f"SQLQUEUE_QUEUES must be a list of queue names or None, not {value!r}.")
        queues = frozenset(value)
        for name in queues:
            if problem := queue_name_problem(name):
                raise ImproperlyConfigured(f"SQLQUEUE_QUEUES: {problem}.")
        if not queues:
            raise ImproperlyConfigured(
                "SQLQUEUE_QUEUES is empty: no job could ever be enqueued. Use None to allow any queue."
            )
        return queues

    @property
    def SQLQUEUE_DEFAULT_QUEUE(self) -> str:
        """The queue of a job whose task and enqueue call name none (default ``"default"``)."""
        value = _read("SQLQUEUE_DEFAULT_QUEUE", "default")
        if problem := queue_name_problem(value):
            raise ImproperlyConfigured(f"SQLQUEUE_DEFAULT_QUEUE: {problem}.")
        queues = self.SQLQUEUE_QUEUES
        if queues is not None and value not in queues:
            raise ImproperlyConfigured(
                f"SQLQUEUE_DEFAULT_QUEUE {value!r} is not one of SQLQUEUE_QUEUES {sorted(queues)}."
            )
        return str(value)

    @property
    def SQLQUEUE_MAX_ATTEMPTS(self) -> int:
        """How many times a job runs before it is FAILED, unless its task says otherwise (default 3)."""
        return _positive_int("SQLQUEUE_MAX_ATTEMPTS", 3, most=MAX_ATTEMPTS)

    @property
    def SQLQUEUE_TIMEOUT(self) -> float | None:
        """Seconds a job may run before the worker stops it; ``None`` (the default) means no limit."""
        if _read("SQLQUEUE_TIMEOUT", None) is None:
            return None
        return _positive_number("SQLQUEUE_TIMEOUT", 0)

    @property
    def SQLQUEUE_RETRY_BACKOFF(self) -> float:
        """Seconds before the first retry; each later retry waits twice as long, with jitter (default 10)."""
        return _positive_number("SQLQUEUE_RETRY_BACKOFF", 10.0)

    @property
    def SQLQUEUE_RETRY_BACKOFF_MAX(self) -> float:
        """The longest wait between two attempts, in seconds (default 3600)."""
        value = _positive_number("SQLQUEUE_RETRY_BACKOFF_MAX", 3600.0)
        if value < self.SQLQUEUE_RETRY_BACKOFF:
            raise ImproperlyConfigured("SQLQUEUE_RETRY_BACKOFF_MAX must not be smaller than SQLQUEUE_RETRY_BACKOFF.")
        return value

    @property
    def SQLQUEUE_BATCH_SIZE(self) -> int:
        """How many jobs one claim takes at most when the caller names no limit (default 100)."""
        return _positive_int("SQLQUEUE_BATCH_SIZE", 100, most=MAX_CLAIM_LIMIT)

    @property
    def SQLQUEUE_HEARTBEAT_INTERVAL(self) -> float:
        """Seconds between two heartbeats of a worker process (default 5)."""
        return _positive_number("SQLQUEUE_HEARTBEAT_INTERVAL", 5.0)

    @property
    def SQLQUEUE_LEASE(self) -> float:
        """Seconds without a heartbeat after which a worker counts as dead and its jobs are
        rescued by any live supervisor (default 60); at least three heartbeats."""
        value = _positive_number("SQLQUEUE_LEASE", 60.0)
        if value < 3 * self.SQLQUEUE_HEARTBEAT_INTERVAL:
            raise ImproperlyConfigured("SQLQUEUE_LEASE must be at least three SQLQUEUE_HEARTBEAT_INTERVALs.")
        return value

    @property
    def SQLQUEUE_POLL_INTERVAL(self) -> float:
        """The longest an idle worker waits before it looks for jobs again (default 1 second).
        It starts at 50 ms after a busy spell and doubles up to this; on PostgreSQL a new job
        wakes it at once."""
        return _positive_number("SQLQUEUE_POLL_INTERVAL", 1.0)

    @property
    def SQLQUEUE_SHUTDOWN_GRACE(self) -> float:
        """Seconds a stopping worker lets its running jobs finish before it kills them (default 30)."""
        return _positive_number("SQLQUEUE_SHUTDOWN_GRACE", 30.0)


conf = Settings()
