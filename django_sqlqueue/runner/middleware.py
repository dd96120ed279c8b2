"""``SQLQUEUE_MIDDLEWARE``: callables that wrap every attempt, as Django's middleware wrap
a view. Each factory is called once per worker process with the next handler
(``get_result``) and returns the handler that takes a job and returns its result::

    def timing(get_result):
        def wrapper(job):
            began = time.perf_counter()
            try:
                return get_result(job)
            finally:
                logger.info("%s took %.3f s", job.task, time.perf_counter() - began)
        return wrapper

The chain runs in the job's own thread, inside ``current_job()`` and between
``job_started`` and ``job_finished``; what it raises fails the attempt as the task
raising would (the retry rules apply), and what it returns is the job's result.

With no middleware there is no chain: the runner calls the task as before, at no cost."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from django_sqlqueue.conf import conf
from django_sqlqueue.models import Job
from django_sqlqueue.rules.failures import Failure, decide
from django_sqlqueue.runner.current import current_job
from django_sqlqueue.runner.execution import run

#: A handler: takes a claimed job, returns its result or raises.
Handler = Callable[[Job], Any]


class Chain:
    """The middleware of ``SQLQUEUE_MIDDLEWARE`` around :func:`run`, built once for
    ``worker_id``; call it with a job."""

    def __init__(self, worker_id: str, factories: Sequence[Callable[[Handler], Handler]]) -> None:
        self.worker_id = worker_id
        handler: Handler = self._innermost
        for factory in reversed(factories):
            wrapped = factory(handler)
            if not callable(wrapped):
                raise ImproperlyConfigured(
                    f"SQLQUEUE_MIDDLEWARE: {factory!r} returned {wrapped!r}, not a handler that takes a job."
                )
            handler = wrapped
        self._outermost = handler

    def __call__(self, job: Job) -> Any:
        return self._outermost(job)

    def _innermost(self, job: Job) -> Any:
        return run(job, self.worker_id)


def chain(worker_id: str) -> Chain | None:
    """The chain of ``SQLQUEUE_MIDDLEWARE`` for ``worker_id``, or None when the setting
    names none. Raises ``ImproperlyConfigured`` for a path that cannot be imported or a
    factory that returns no handler (and whatever a factory raises)."""
    factories = conf.SQLQUEUE_MIDDLEWARE
    return Chain(worker_id, factories) if factories else None


def after_error(job: Job, error: BaseException) -> Failure:
    """What ``job``'s attempt that raised ``error`` becomes, for a middleware that must
    know as the attempt fails its transition (``retry``, ``fail``, ``stop``,
    ``snooze``...: was it the job's last?) and the error it is failed with
    (``SnoozedTooOften`` for a snooze too many). Inside the attempt this is the
    decision the runner writes, made once for all who ask (``JobHandle.decision``): the
    traceback is formatted once. Elsewhere it is decided by the same rules, its record
    naming no worker."""
    handle = current_job()
    if handle is not None and handle.job is job:
        return handle.decision(error)
    return decide(job, error, worker_id="")
