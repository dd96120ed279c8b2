"""The app's settings: one typed property each, read from ``django.conf.settings`` on
every access (through a memo that every ``override_settings`` starts again, so
that it works), and validated where they are read so that a bad value
fails loudly (``checks`` turns the same errors into system check errors at
start-up).

The memo is hidden state kept on Django's private ``settings._wrapped``: the holder
``override_settings`` swaps, so a swap starts the memo again. It exists because a
setting a project leaves out costs Django an exception on every read, several per job
built; a read through it equals a plain read, under any override
(``test_every_setting_read_through_the_memo_equals_a_plain_read``)."""

from __future__ import annotations

import datetime
import math
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, Generic, Literal, TypeVar, cast, overload

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from django_sqlqueue.rules.embedded import Embedded, parse_embedded
from django_sqlqueue.rules.lifecycle import JobStatus
from django_sqlqueue.rules.limits import MAX_ATTEMPTS, MAX_SNOOZES
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


def _positive_number(name: str, value: Any) -> float:
    # An int past the largest float is below infinity, but not a number of seconds.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= sys.float_info.max:
        raise ImproperlyConfigured(f"{name} must be a positive number of seconds, not {value!r}.")
    return float(value)


def _positive_int(name: str, value: Any, most: int) -> int:
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


def _callables(name: str, paths: Any) -> tuple[Callable[[Any], Any], ...]:
    """The callables the dotted ``paths`` of setting ``name`` name, imported (Python
    keeps the modules: each is imported once per process)."""
    if isinstance(paths, str) or not isinstance(paths, (list, tuple)):
        raise ImproperlyConfigured(f"{name} must be a list of dotted paths, not {paths!r}.")
    found = []
    for path in paths:
        if not isinstance(path, str):
            raise ImproperlyConfigured(f"{name} must hold dotted paths (strings), not {path!r}.")
        try:
            named = import_string(path)
        except Exception as error:  # a module that raises as it is imported, too
            raise ImproperlyConfigured(f"{name}: cannot import {path!r}: {type(error).__name__}: {error}.") from None
        if not callable(named):
            raise ImproperlyConfigured(f"{name}: {path!r} is not callable.")
        found.append(named)
    return tuple(found)


class Setting(Generic[T]):
    """One ``SQLQUEUE_*`` setting of :class:`Settings`: its name, its default and the
    function that checks and converts the value read, whose docstring and return type
    document it. The one place a default is written: the settings reference
    (``docs/reference/settings.md``) is generated from these."""

    def __init__(self, parse: Callable[[Settings, Any], T], default: object) -> None:
        self.name = parse.__name__
        self.default = default
        self.parse = parse
        self.__doc__ = parse.__doc__

    @property
    def annotation(self) -> str:
        """The value's type, as its annotation spells it."""
        return str(self.parse.__annotations__["return"])

    @overload
    def __get__(self, instance: None, owner: type[Settings]) -> Setting[T]: ...

    @overload
    def __get__(self, instance: Settings, owner: type[Settings]) -> T: ...

    def __get__(self, instance: Settings | None, owner: type[Settings]) -> Setting[T] | T:
        if instance is None:
            return self
        return self.parse(instance, _read(self.name, self.default))


def setting(default: object) -> Callable[[Callable[[Settings, Any], T]], Setting[T]]:
    """Make the decorated ``parse(settings, value)`` the setting of its name, read with
    ``default`` when the project leaves it out."""
    return lambda parse: Setting(parse, default)


class Settings:
    """Typed access to every ``SQLQUEUE_*`` setting, with its default."""

    @setting(default=None)
    def SQLQUEUE_QUEUES(self, value: Any) -> frozenset[str] | None:
        """The queue names jobs may be enqueued on; ``None`` allows any."""
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

    @setting(default="default")
    def SQLQUEUE_DEFAULT_QUEUE(self, value: Any) -> str:
        """The queue of a job whose task and enqueue call name none; one of
        ``SQLQUEUE_QUEUES`` when that is set."""
        if problem := queue_name_problem(value):
            raise ImproperlyConfigured(f"SQLQUEUE_DEFAULT_QUEUE: {problem}.")
        if problem := unlisted_queues_problem([value], self.SQLQUEUE_QUEUES):
            raise ImproperlyConfigured(f"SQLQUEUE_DEFAULT_QUEUE: {problem}.")
        return str(value)

    @setting(default=3)
    def SQLQUEUE_MAX_ATTEMPTS(self, value: Any) -> int:
        """How many times a job runs before it is FAILED, unless its task says otherwise."""
        return _positive_int("SQLQUEUE_MAX_ATTEMPTS", value, most=MAX_ATTEMPTS)

    @setting(default=100)
    def SQLQUEUE_MAX_SNOOZES(self, value: Any) -> int:
        """How many times a job may snooze (``raise Snooze(delay)``) before it is FAILED,
        unless its task says otherwise (``@job(max_snoozes=...)``): enough for a task that
        waits on something for hours in steps of minutes, and an end to one that snoozes
        for ever. A snooze counts no attempt; 0 fails a job at its first snooze."""
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SNOOZES:
            raise ImproperlyConfigured(
                f"SQLQUEUE_MAX_SNOOZES must be an integer from 0 to {MAX_SNOOZES}, not {value!r}."
            )
        return value

    @setting(default=None)
    def SQLQUEUE_TIMEOUT(self, value: Any) -> float | None:
        """Seconds a job may run before the worker stops it; ``None`` means no limit."""
        return None if value is None else _positive_number("SQLQUEUE_TIMEOUT", value)

    @setting(default=10.0)
    def SQLQUEUE_RETRY_BACKOFF(self, value: Any) -> float:
        """Seconds before the first retry; each later retry waits twice as long, with jitter.
        A task's own backoff (``@job(backoff=...)``, or a Django task's) decides instead."""
        return _positive_number("SQLQUEUE_RETRY_BACKOFF", value)

    @setting(default=3600.0)
    def SQLQUEUE_RETRY_BACKOFF_MAX(self, value: Any) -> float:
        """The longest wait between two attempts, in seconds; not below ``SQLQUEUE_RETRY_BACKOFF``."""
        longest = _positive_number("SQLQUEUE_RETRY_BACKOFF_MAX", value)
        if longest < self.SQLQUEUE_RETRY_BACKOFF:
            raise ImproperlyConfigured("SQLQUEUE_RETRY_BACKOFF_MAX must not be smaller than SQLQUEUE_RETRY_BACKOFF.")
        return longest

    @setting(default=100)
    def SQLQUEUE_BATCH_SIZE(self, value: Any) -> int:
        """How many jobs one claim takes at most when the caller names no limit."""
        return _positive_int("SQLQUEUE_BATCH_SIZE", value, most=MAX_CLAIM_LIMIT)

    @setting(default=5.0)
    def SQLQUEUE_HEARTBEAT_INTERVAL(self, value: Any) -> float:
        """Seconds between two heartbeats of a worker process."""
        return _positive_number("SQLQUEUE_HEARTBEAT_INTERVAL", value)

    @setting(default=60.0)
    def SQLQUEUE_LEASE(self, value: Any) -> float:
        """Seconds without a heartbeat after which a worker counts as dead and its jobs are
        rescued by whoever holds the maintenance lease (a supervisor, or a web process
        with embedded workers); at least three heartbeats."""
        lease = _positive_number("SQLQUEUE_LEASE", value)
        if lease < 3 * self.SQLQUEUE_HEARTBEAT_INTERVAL:
            raise ImproperlyConfigured("SQLQUEUE_LEASE must be at least three SQLQUEUE_HEARTBEAT_INTERVALs.")
        return lease

    @setting(default=1.0)
    def SQLQUEUE_POLL_INTERVAL(self, value: Any) -> float:
        """The longest an idle worker waits, in seconds, before it looks for jobs again.
        It starts at 50 ms after a busy spell and doubles up to this; on PostgreSQL a new job
        wakes it at once."""
        return _positive_number("SQLQUEUE_POLL_INTERVAL", value)

    @setting(default=None)
    def SQLQUEUE_WAKEUP_DIR(self, value: Any) -> str | Literal[False] | None:
        """Where idle workers on SQLite and MySQL/MariaDB wait for a datagram that an
        enqueue on the same host sends when it commits, which starts the job within
        milliseconds rather than at the next poll: the folder of a socket per worker
        process, in a subfolder per database. ``None`` picks ``$XDG_RUNTIME_DIR/sqlqueue``,
        or ``sqlqueue-<uid>`` in the temporary folder; a path (absolute, this user's, that
        others cannot write to) puts it there; ``False`` turns the wake-up off (workers
        poll). PostgreSQL's workers ``LISTEN`` instead. On MySQL/MariaDB the claims of a
        host's workers also take turns on a file there (none with ``False``)."""
        if value is None or value is False:
            return value
        if not isinstance(value, (str, os.PathLike)) or not os.path.isabs(value):
            raise ImproperlyConfigured(
                f"SQLQUEUE_WAKEUP_DIR must be an absolute path, None (a folder of its own) or False (off), "
                f"not {value!r}."
            )
        return os.fspath(value)

    @setting(default=30.0)
    def SQLQUEUE_SHUTDOWN_GRACE(self, value: Any) -> float:
        """Seconds a stopping worker lets its running jobs finish before it kills them."""
        return _positive_number("SQLQUEUE_SHUTDOWN_GRACE", value)

    @setting(default="fork" if sys.platform.startswith("linux") else "spawn")
    def SQLQUEUE_WORKER_START(self, value: Any) -> Literal["fork", "spawn"]:
        """How ``runworkers`` starts its worker processes: ``"fork"`` (the default on Linux)
        forks them from the supervisor, Django already set up, and falls back to
        ``"spawn"`` while the supervisor runs another thread; ``"spawn"`` (the default
        elsewhere) starts each in a fresh interpreter, which sets Django up again."""
        if value == "spawn" or (value == "fork" and sys.platform.startswith("linux")):
            return cast(Literal["fork", "spawn"], value)
        if value == "fork":
            raise ImproperlyConfigured(
                f"SQLQUEUE_WORKER_START 'fork' is supported on Linux only, not on {sys.platform}: use 'spawn'."
            )
        raise ImproperlyConfigured(f"SQLQUEUE_WORKER_START must be 'fork' or 'spawn', not {value!r}.")

    @setting(default=30.0)
    def SQLQUEUE_CANCEL_GRACE(self, value: Any) -> float:
        """Seconds a running job may go on after its worker learnt it was cancelled before
        it is stopped like a job past its timeout."""
        return _positive_number("SQLQUEUE_CANCEL_GRACE", value)

    @setting(default=DEFAULT_RETENTION)
    def SQLQUEUE_RETENTION(self, value: Any) -> dict[JobStatus, datetime.timedelta | None]:
        """How long finished jobs are kept after ``finished_at``, by status: seconds or a
        ``timedelta``, ``None`` to keep them for ever. A status left out keeps its default.
        ``SUCCESSFUL: 0`` deletes a job as its success is recorded."""
        return _retention(value)

    @setting(default={})
    def SQLQUEUE_SCHEDULE(self, value: Any) -> dict[str, Entry]:
        """Recurring jobs by name: each entry a dict with ``task``, one of
        ``cron`` (five fields) or ``every`` (seconds or a ``timedelta``), and optionally
        ``args``, ``kwargs``, ``queue``, ``priority``, ``tz`` (default ``TIME_ZONE``),
        ``enabled`` and ``missed`` (``"skip"``, ``"latest"``, ``"all"``)."""
        return parse_schedule(value, default_tz=settings.TIME_ZONE or "UTC")

    @setting(default=())
    def SQLQUEUE_MIDDLEWARE(self, value: Any) -> tuple[Callable[[Any], Any], ...]:
        """Dotted paths to middleware that wrap every attempt, outermost first, as Django's
        ``MIDDLEWARE`` wraps a view: each is called once per worker process with the next
        handler (``get_result``) and returns the handler that takes a job and returns its
        result. See the Middleware and signals guide."""
        return _callables("SQLQUEUE_MIDDLEWARE", value)

    @setting(default=())
    def SQLQUEUE_ENQUEUE_HOOKS(self, value: Any) -> tuple[Callable[[Any], Any], ...]:
        """Dotted paths to callables that each job is passed to as it is enqueued, in the
        caller's thread, before it is checked and written: one may add to what the job
        carries (the caller's request id, say). Not called by ``enqueue_rows``, which
        makes no job objects. See the Middleware and signals guide."""
        return _callables("SQLQUEUE_ENQUEUE_HOOKS", value)

    @setting(default={})
    def SQLQUEUE_RATE_LIMITS(self, value: Any) -> dict[str, Rate]:
        """Rate limits by name, for ``@job(rate_limit=name)``: ``"25/s"``,
        ``"100/m"``, ``"1000/h"``, with an optional ``" burst N"`` (default one second's worth)."""
        if not isinstance(value, Mapping):
            raise ImproperlyConfigured(f"SQLQUEUE_RATE_LIMITS must be a dict of names to rates, not {value!r}.")
        try:
            return {name: parse_rate(name, text) for name, text in value.items()}
        except ValueError as error:
            raise ImproperlyConfigured(f"SQLQUEUE_RATE_LIMITS: {error}.") from None

    @setting(default=5.0)
    def SQLQUEUE_ADMIN_REFRESH(self, value: Any) -> float | None:
        """Seconds between the updates of the admin's live pages (the queue overview, the
        job list and a running job's page) while they are open in a visible tab, at least
        1; ``None`` turns the updates off (the pages then show what they read on load)."""
        if value is None:
            return None
        seconds = _positive_number("SQLQUEUE_ADMIN_REFRESH", value)
        if seconds < 1:
            raise ImproperlyConfigured(f"SQLQUEUE_ADMIN_REFRESH must be at least 1 second, or None, not {value!r}.")
        return seconds

    @setting(default=None)
    def SQLQUEUE_EMBEDDED(self, value: Any) -> Embedded | None:
        """Worker threads in each web process, for a site on one machine that runs no
        ``runworkers``: ``{"queues": [...], "threads": N}`` (both optional: every queue,
        one thread; at most 32); ``None`` (the default) runs none. Each process that serves a request
        starts them on its first one, never under a management command or the tests. See
        the guide "Run jobs inside the web processes"."""
        if value is None:
            return None
        try:
            return parse_embedded(value, self.SQLQUEUE_QUEUES)
        except ValueError as error:
            raise ImproperlyConfigured(f"SQLQUEUE_EMBEDDED: {error}.") from None


def setting_names() -> list[str]:
    """The name of every ``SQLQUEUE_*`` setting the app reads, in :class:`Settings`'s order."""
    return [name for name, value in vars(Settings).items() if isinstance(value, Setting)]


conf = Settings()
