"""What a failed attempt becomes, decided without the database: cancelled, snoozed,
retried after a backoff or failed for good, by the lifecycle table; and what is kept
of its exception, cut and escaped so that every database stores it. The finisher
(``db/finishing``) writes what is decided here; the runner logs it and tells Django's
task signals the same."""

from __future__ import annotations

import copy
import datetime
import math
import random
import traceback
from typing import Any, NamedTuple, Protocol

from django_sqlqueue.conf import conf
from django_sqlqueue.exceptions import InvalidJobError, JobCancelled, Snooze, SnoozedTooOften, UnknownTaskError
from django_sqlqueue.rules.backoff import Backoff, asked_delay
from django_sqlqueue.rules.lifecycle import (
    GIVE_UP,
    RETRY,
    SNOOZE,
    JobStatus,
    Transition,
    failure_transition,
    snooze_transition,
)
from django_sqlqueue.rules.registry import get_task
from django_sqlqueue.rules.validation import delay_problem


class Attempt(Protocol):
    """What the decisions read of a claimed job (a row of the jobs table)."""

    @property
    def task(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def snoozes(self) -> int: ...
    @property
    def errors(self) -> list[Any]: ...
    @property
    def started_at(self) -> datetime.datetime | None: ...
    @property
    def cancel_requested_at(self) -> datetime.datetime | None: ...


#: The most of an exception's message and of its traceback kept in a job's errors:
#: enough to debug, and small enough that every attempt's error fits in one row.
MESSAGE_LIMIT = 10_000
TRACEBACK_LIMIT = 50_000


def retry_delay(attempt: int) -> datetime.timedelta:
    """How long a job waits after its ``attempt``-th failure: doubling from
    ``SQLQUEUE_RETRY_BACKOFF``, capped at ``SQLQUEUE_RETRY_BACKOFF_MAX``, and spread over
    its upper half so that jobs which failed together do not retry together."""
    cap = conf.SQLQUEUE_RETRY_BACKOFF_MAX
    # Doubling past the cap would overflow a float for a job retried thousands of times.
    doublings = min(attempt - 1, math.ceil(math.log2(cap / conf.SQLQUEUE_RETRY_BACKOFF)))
    ceiling = min(cap, conf.SQLQUEUE_RETRY_BACKOFF * 2**doublings)
    return datetime.timedelta(seconds=random.uniform(ceiling / 2, ceiling))


def attempt_number(job: Attempt) -> int:
    """The number of a claimed job's attempt over its whole life, as its page and the
    worker's log say it; not within its current ``max_attempts`` (``attempts``): an admin
    Retry starts ``attempts`` from 0 again, but every attempt before it that ended
    without success left one record in ``errors``."""
    return len(job.errors) + 1


def error_record(job: Attempt, error: BaseException, worker_id: str) -> dict[str, Any]:
    """What is kept of a failed attempt; the keys follow Django Tasks' ``TaskError``.
    ``attempt`` is :func:`attempt_number`'s."""
    kind = type(error)
    return {
        "attempt": attempt_number(job),
        "worker": worker_id,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "exception_class_path": f"{kind.__module__}.{kind.__qualname__}",
        "message": error_message(error),
        "traceback": _storable("".join(traceback.format_exception(error)), TRACEBACK_LIMIT),
    }


def error_message(error: BaseException) -> str:
    """``str(error)`` as a failed attempt keeps it (see :func:`_storable`), or a
    placeholder naming the class when its ``__str__`` raises: never an exception."""
    try:
        message = str(error)
    except Exception as problem:
        message = f"<str() of this {type(error).__qualname__} raised {type(problem).__qualname__}>"
    return _storable(message, MESSAGE_LIMIT)


def _storable(text: str, limit: int) -> str:
    """``text`` as every database stores it: NUL (refused by PostgreSQL) and lone
    surrogates (refused by PostgreSQL and MariaDB) written out as escapes, and the middle cut,
    saying so, past ``limit`` characters (the end of a traceback says the most)."""
    text = text.replace("\0", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[: limit // 2]}\n[... {cut} characters cut ...]\n{text[-(limit - limit // 2) :]}"


class Failure(NamedTuple):
    """An attempt that raised, decided once (:func:`decide`): what the runner logs and
    tells Django's task signals is what the finisher writes, the same backoff among it.
    A snooze (its task raised ``Snooze``) is one too, which counts no failure."""

    error: BaseException
    #: What is kept of it in the job's ``errors`` (:func:`error_record`); None for a snooze.
    record: dict[str, Any] | None
    #: ``stop``, ``retry`` or ``fail`` (``rules.lifecycle.AFTER_FAILURE``), ``give_up`` (its
    #: task's backoff declined a retry, or raised or returned no delay: the error says so), or
    #: ``snooze`` or ``snooze_spent`` (``AFTER_SNOOZE``).
    transition: Transition
    #: How long a retry (:func:`retry_delay`) or a snooze waits; None for the others.
    delay: datetime.timedelta | None


def decide(job: Attempt, error: BaseException, worker_id: str) -> Failure:
    """What ``job``'s attempt in ``worker_id`` that raised ``error`` becomes, by the
    lifecycle table: ``CANCELLED`` when it was cancelled (it raised ``JobCancelled``, or
    someone asked to cancel it); a snooze (:func:`snoozed`) when it raised ``Snooze``;
    else back to ``READY`` while it has attempts left, after its task's backoff's delay
    (``rules.backoff``: ``FAILED`` at once when that declines, raises or returns no delay)
    or else :func:`retry_delay`; else ``FAILED``. Call it once per attempt: the delay is
    drawn at random, and the backoff asked once."""
    cancelled = isinstance(error, JobCancelled) or job.cancel_requested_at is not None
    if isinstance(error, Snooze) and not cancelled:
        return snoozed(job, error, worker_id)
    transition = failure_transition(attempts=job.attempts, max_attempts=job.max_attempts, cancelled=cancelled)
    record = error_record(job, error, worker_id)
    if transition is not RETRY:
        return Failure(error, record, transition, None)
    backoff = _backoff(job.task)
    if backoff is None:
        return Failure(error, record, transition, retry_delay(job.attempts))
    try:
        delay = asked_delay(backoff, error, _failed(job, record), job.task)
    except InvalidJobError as invalid:
        return Failure(invalid, error_record(job, invalid, worker_id), GIVE_UP, None)
    return Failure(error, record, GIVE_UP, None) if delay is None else Failure(error, record, RETRY, delay)


def _backoff(task: str) -> Backoff | None:
    """``task``'s own backoff (``@job(backoff=...)``, or a Django task's), or None."""
    try:
        return get_task(task).backoff
    except UnknownTaskError:
        return None


def _failed(job: Attempt, record: dict[str, Any]) -> Any:
    """A copy of ``job`` as its failed attempt leaves it, for its task's backoff: ``FAILED``,
    its error last in ``errors``. The job itself is written by the finisher only."""
    failed = copy.copy(job)
    failed.errors = [*job.errors, record]  # type: ignore[misc]  # a row's column, read-only in the protocol
    failed.status = JobStatus.FAILED  # type: ignore[attr-defined]
    return failed


def snoozed(job: Attempt, snooze: Snooze, worker_id: str) -> Failure:
    """What ``job``'s attempt that raised ``snooze`` becomes: back to ``READY`` after its
    delay (``snooze``) while its task's ``max_snoozes`` is not reached, else ``FAILED``
    with ``SnoozedTooOften`` (``snooze_spent``). A delay out of range fails the attempt
    (an ``InvalidJobError`` saying why), as any exception would."""
    if problem := delay_problem(snooze.delay):
        invalid = InvalidJobError(f"{job.task} raised Snooze, but its {problem}")
        invalid.__cause__ = snooze
        return decide(job, invalid, worker_id)
    most = max_snoozes(job.task)
    transition = snooze_transition(snoozes=job.snoozes, max_snoozes=most)
    if transition is SNOOZE:
        delay = (
            snooze.delay if isinstance(snooze.delay, datetime.timedelta) else datetime.timedelta(seconds=snooze.delay)
        )
        return Failure(snooze, None, transition, delay)
    too_often = SnoozedTooOften(f"{job.task} snoozed {job.snoozes + 1} times, more than its max_snoozes ({most})")
    too_often.__cause__ = snooze
    return Failure(too_often, error_record(job, too_often, worker_id), transition, None)


def max_snoozes(task: str) -> int:
    """How many times a job of ``task`` may snooze: its ``@job(max_snoozes=...)``, else
    ``SQLQUEUE_MAX_SNOOZES``."""
    try:
        own = get_task(task).max_snoozes
    except UnknownTaskError:
        own = None
    return conf.SQLQUEUE_MAX_SNOOZES if own is None else own
