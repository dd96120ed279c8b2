"""Middleware (``SQLQUEUE_MIDDLEWARE``) and signal receivers for the middleware and
signal tests. Each notes what it sees as a line: in the file ``SQLQUEUE_TEST_LOG``
names (a worker process's), else in :data:`NOTED` (the test process's)."""

from __future__ import annotations

import contextvars
import os
import threading
from typing import Any

from django_sqlqueue import current_job, signals
from django_sqlqueue.models import Job
from django_sqlqueue.runner.middleware import Handler

#: The lines noted in this process, when no file is named.
NOTED: list[str] = []


class Refused(Exception):
    """What :func:`recording` raises for a job whose kwargs say ``refuse``."""


def note(line: str) -> None:
    if path := os.environ.get("SQLQUEUE_TEST_LOG"):
        with open(path, "a") as log:
            log.write(line + "\n")
    else:
        NOTED.append(line)


def recording(get_result: Handler) -> Handler:
    """Notes each attempt it wraps, the thread and the current job; refuses (raises
    :class:`Refused`) a job whose kwargs say ``refuse``."""
    note("recording built")

    def wrapper(job: Job) -> Any:
        handle = current_job()
        note(f"recording before {job.pk} attempt {job.attempts} current {handle and handle.id} thread {_thread()}")
        if job.kwargs.get("refuse"):
            raise Refused(f"job {job.pk} refused")
        try:
            value = get_result(job)
        except Exception as error:
            note(f"recording raised {job.pk} {type(error).__name__}")
            raise
        note(f"recording after {job.pk} {value!r}")
        return value

    return wrapper


def outer(get_result: Handler) -> Handler:
    """Notes before and after the handler it wraps, to show the order."""
    note("outer built")

    def wrapper(job: Job) -> Any:
        note(f"outer before {job.pk}")
        value = get_result(job)
        note(f"outer after {job.pk}")
        return value

    return wrapper


def signalling(get_result: Handler) -> Handler:
    """Connects, once per worker process, a receiver that notes every job signal and
    one that raises on each; wraps nothing."""
    for name, signal in {"enqueued": signals.job_enqueued, **signals.job_ended}.items():
        signal.connect(_noting(name), weak=False, dispatch_uid=f"tests.support.middleware.{name}")
        signal.connect(broken, dispatch_uid=f"tests.support.middleware.broken.{name}")
    return get_result


def _noting(name: str) -> Any:
    def noted(sender: type[Job], *, job: Job, **named: Any) -> None:
        error = named.get("error")
        said = "" if error is None else f" {type(error).__name__}"
        note(f"signal {name} {job.pk} {job.status}{said} thread {_thread()}")

    return noted


def broken(**named: Any) -> None:
    """A receiver with a bug."""
    raise ValueError("a receiver's bug")


def not_a_factory(get_result: Handler) -> None:
    """A middleware that forgot to return its wrapper."""


def _thread() -> str:
    return "main" if threading.current_thread() is threading.main_thread() else "other"


#: Not callable: a setting naming it is an error.
NOT_CALLABLE = 42


#: What a hook written for web requests reads: set by a request, unset in the runner.
REQUEST_USER: contextvars.ContextVar[str] = contextvars.ContextVar("tests_request_user")


def request_scoped(job: Job) -> None:
    """An enqueue hook written for web requests: it tags each job with the request's
    user, and raises ``LookupError`` where there is no request (the runner's own
    enqueues), after it has changed the job in place."""
    job.priority = 7
    meta = job.meta = job.meta if job.meta is not None else {}
    meta["user"] = "half-set"
    meta["user"] = REQUEST_USER.get()


class Unprintable(LookupError):
    """An exception whose ``__str__`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no words for it")


def raising_badly(job: Job) -> None:
    """An enqueue hook that raises an exception no database stores as it says itself
    (a NUL), or whose ``__str__`` raises, by the job's first argument."""
    if job.args and job.args[0] == "unprintable":
        raise Unprintable()
    raise LookupError("no request\x00 here")


def urgent(job: Job) -> None:
    """An enqueue hook: notes each job it sees (unsaved), and makes the one whose
    kwargs say ``urgent`` a priority 9 job (whatever that says: 10**9 is refused)."""
    note(f"hook {job.task} saved {job.pk is not None}")
    if urgency := job.kwargs.get("urgent"):
        job.priority = 9 if urgency is True else urgency


def request_scoped_receiver(sender: Any, **kwargs: Any) -> None:
    """A signal receiver written for web requests: it logs under the request's user, and
    raises ``LookupError`` where there is none (in a worker)."""
    note(f"receiver for {REQUEST_USER.get()}")


def connect_request_scoped_receivers() -> None:
    """Connect :func:`request_scoped_receiver` to every signal a worker sends about a
    job: what a worker process started with ``SQLQUEUE_TEST_RAISING_RECEIVERS`` does
    (``tests.testapp.apps``)."""
    for signal in (signals.job_started, signals.job_finished, signals.job_unblocked, *signals.job_ended.values()):
        signal.connect(request_scoped_receiver, dispatch_uid=f"request-scoped-{id(signal)}")
