"""The app's settings: one typed property each, read from ``django.conf.settings`` on
every access (through a memo that every ``override_settings`` starts again, so
that it works), and validated where they are read so that a bad value
fails loudly (``checks.py`` turns the same errors into system check errors at
start-up).

The memo is hidden state kept on Django's private ``settings._wrapped``: the holder
``override_settings`` swaps, so a swap starts the memo again. It exists because a
setting a project leaves out costs Django an exception on every read, several per job
built; a read through it equals a plain read, under any override
(``test_every_setting_read_through_the_memo_equals_a_plain_read``)."""

from __future__ import annotations

import datetime
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from django_sqlqueue.rules.lifecycle import JobStatus
from django_sqlqueue.rules.limits import MAX_ATTEMPTS
from django_sqlqueue.rules.queues import queue_name_problem, unlisted_queues_problem
from django_sqlqueue.rules.rates import Rate, parse_rate
from django_sqlqueue.rules.recurrence import Entry, parse_schedule

#: The most jobs one claim may take: far more than a batch needs, few enough to hold
#: in memory and to pass to every database as a ``LIMIT``.
MAX_CLAIM_LIMIT = 100_000
#: How long finished jobs are kept by default: a day of successes (enough to look into
#: yesterday's work, few enough rows for a busy site), a week of cancellations and a
#: month of failures (they are what someone comes back to read).
DEFAULT_RETENTION: dict[JobStatus, datetime.timedelta | None] = {
    JobStatus.SUCCESSFUL: datetime.timedelta(days=1),
    JobStatus.CANCELLED: datetime.timedelta(days=7),
    JobStatus.FAILED: datetime.timedelta(days=30),
}
#: The longest a status may be kept short of for ever: a century.
MAX_RETENTION = datetime.timedelta(days=36_525)


class _Memo:
    """The settings read so far, by name (a missing one as :data:`_MISSING`), and what
    :func:`remembered` made from them, by its key, from one settings holder:
    ``override_settings`` (and pytest-django's ``settings``, which deletes through it
    without a ``setting_changed``) puts another holder in place and restores the first
    after, and either way the memo starts again."""

    def __init__(self) -> None:
        self.holder: object = None
        self.values: dict[str | tuple[str, str], Any] = {}


_memo = _Memo()
_MISSING = object()
T = TypeVar("T")


def _values() -> dict[str | tuple[str, str], Any]:
    """The memo's values, emptied first when another settings holder is in place."""
    holder = settings._wrapped  # type: ignore[misc]  # the stubs know the holder, not LazySettings
    if holder is not _memo.holder:
        _memo.holder, _memo.values = holder, {}
    return _memo.values


def _read(name: str, default: Any) -> Any:
    """``getattr(settings, name, default)``, remembered: a setting a project leaves out
    (most of ours) costs Django's settings an exception on every read, and a build of
    a job reads three of them."""
    values = _values()
    try:
        value = values[name]
    except KeyError:
        value = values[name] = getattr(settings, name, _MISSING)
    return default if value is _MISSING else value


def remembered(key: tuple[str, str], make: Callable[[], T]) -> T:
    """``make()``, remembered beside the settings read so far, so made again once
    another settings holder is in place: for what is worked out from settings on
    every call (a task's defaults, on every job built). ``make`` raising is not
    remembered."""
    values = _values()
    try:
        return cast("T", values[key])
    except KeyError:
        value = values[key] = make()
        return value


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


def _retention(value: Any) -> dict[JobStatus, datetime.timedelta | None]:
    if not isinstance(value, Mapping):
        raise ImproperlyConfigured(f"SQLQUEUE_RETENTION must be a dict of status to seconds, not {value!r}.")
    retention = dict(DEFAULT_RETENTION)
    for status, kept in value.items():
        if status not in DEFAULT_RETENTION:
            raise ImproperlyConfigured(
                f"SQLQUEUE_RETENTION: {status!r} is not a finished status; use "
                f"{', '.join(repr(str(name)) for name in DEFAULT_RETENTION)}."
            )
        if kept is not None:
            kept = _retention_period(status, kept)
        retention[JobStatus(status)] = kept
    return retention


def _retention_period(status: str, value: Any) -> datetime.timedelta:
    if isinstance(value, datetime.timedelta):
        kept = value
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ImproperlyConfigured(
            f"SQLQUEUE_RETENTION['{status}'] must be seconds, a timedelta or None, not {value!r}."
        )
    else:
        kept = datetime.timedelta(seconds=max(-1, min(value, MAX_RETENTION.total_seconds() + 1)))
    # Past a century the database's now minus it may leave the dates a database can hold.
    if not datetime.timedelta(0) <= kept <= MAX_RETENTION:
        raise ImproperlyConfigured(
            f"SQLQUEUE_RETENTION['{status}'] must be from 0 to {MAX_RETENTION.days} days "
            f"(None keeps jobs for ever), not {value!r}."
        )
    return kept


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
        if problem := unlisted_queues_problem([value], self.SQLQUEUE_QUEUES):
            raise ImproperlyConfigured(f"SQLQUEUE_DEFAULT_QUEUE: {problem}.")
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

    @property
    def SQLQUEUE_CANCEL_GRACE(self) -> float:
        """Seconds a running job may go on after its worker learnt it was cancelled before
        it is stopped like a job past its timeout (default 30)."""
        return _positive_number("SQLQUEUE_CANCEL_GRACE", 30.0)

    @property
    def SQLQUEUE_RETENTION(self) -> dict[JobStatus, datetime.timedelta | None]:
        """How long finished jobs are kept after ``finished_at``, by status: seconds or a
        ``timedelta``, ``None`` to keep them for ever. A status left out keeps its default
        (``DEFAULT_RETENTION``: successes a day, cancellations a week, failures 30 days).
        ``SUCCESSFUL: 0`` deletes a job as its success is recorded."""
        return _retention(_read("SQLQUEUE_RETENTION", {}))

    @property
    def SQLQUEUE_SCHEDULE(self) -> dict[str, Entry]:
        """Recurring jobs by name (default none): each entry a dict with ``task``, one of
        ``cron`` (five fields) or ``every`` (seconds or a ``timedelta``), and optionally
        ``args``, ``kwargs``, ``queue``, ``priority``, ``tz`` (default ``TIME_ZONE``),
        ``enabled`` and ``missed`` (``"skip"``, ``"latest"``, ``"all"``)."""
        return parse_schedule(_read("SQLQUEUE_SCHEDULE", {}), default_tz=settings.TIME_ZONE or "UTC")

    @property
    def SQLQUEUE_RATE_LIMITS(self) -> dict[str, Rate]:
        """Rate limits by name (default none), for ``@job(rate_limit=name)``: ``"25/s"``,
        ``"100/m"``, ``"1000/h"``, with an optional ``" burst N"`` (default one second's worth)."""
        value = _read("SQLQUEUE_RATE_LIMITS", {})
        if not isinstance(value, Mapping):
            raise ImproperlyConfigured(f"SQLQUEUE_RATE_LIMITS must be a dict of names to rates, not {value!r}.")
        try:
            return {name: parse_rate(name, text) for name, text in value.items()}
        except ValueError as error:
            raise ImproperlyConfigured(f"SQLQUEUE_RATE_LIMITS: {error}.") from None


conf = Settings()
