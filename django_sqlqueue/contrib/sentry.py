"""Sentry error reporting of jobs (``pip install "django-sqlqueue[sentry]"``): one line
of settings, beside the project's own ``sentry_sdk.init(...)``::

    SQLQUEUE_MIDDLEWARE = ["django_sqlqueue.contrib.sentry.middleware"]

A job that fails for good (the state machine's outcome ``failed``: its last attempt
raised, or it snoozed once more than its ``max_snoozes``) is reported once, with its
exception and traceback, tagged ``sqlqueue.task``, ``sqlqueue.job_id``,
``sqlqueue.attempt``, ``sqlqueue.queue`` and ``sqlqueue.outcome``, and a context
``sqlqueue job`` that gives the arguments' shape: their types, never their values
(they may hold personal data). An attempt that fails and will be retried is not
reported, nor a snooze, nor a job cancelled: a flaky call that succeeds on its second
attempt raises no alert. :data:`every_attempt_middleware` reports every failed
attempt, a retried one at the level ``warning``.

Everything else sent while an attempt runs (a ``capture_message``, a log record of the
task's) carries the same tags: each attempt has an isolation scope of its own. The
middleware reports the failures itself, so it tells sentry-sdk's logging integration
to leave the runner's log line of each attempt alone (it would make a second event,
without the traceback, of each final failure)."""

from __future__ import annotations

import atexit
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django_sqlqueue.contrib import missing
from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import FAIL, RETRY
from django_sqlqueue.runner.execution import logger as attempts_logger
from django_sqlqueue.runner.middleware import Handler, after_error

try:
    import sentry_sdk
    from sentry_sdk.integrations.logging import ignore_logger
except ImportError as error:
    raise missing("sentry", "sentry-sdk", error) from None


def reporting(*, every_attempt: bool) -> Callable[[Handler], Handler]:
    """A middleware factory that reports a job's final failure to Sentry, or with
    ``every_attempt`` each failed attempt that is retried too."""
    reported = {FAIL.outcome, RETRY.outcome} if every_attempt else {FAIL.outcome}

    def factory(get_result: Handler) -> Handler:
        ignore_logger(attempts_logger.name)
        # Once per worker process: a forked one does not run the exit functions
        # sentry_sdk.init() registered in the supervisor, so the last reports are sent here.
        atexit.register(sentry_sdk.flush)

        def wrapper(job: Job) -> Any:
            with sentry_sdk.isolation_scope() as scope:
                scope.set_tags(
                    {
                        "sqlqueue.task": job.task,
                        "sqlqueue.job_id": str(job.pk),
                        "sqlqueue.attempt": str(job.attempts),
                        "sqlqueue.queue": job.queue,
                    }
                )
                scope.set_context(
                    "sqlqueue job",
                    {
                        "id": job.pk,
                        "task": job.task,
                        "queue": job.queue,
                        "attempt": job.attempts,
                        "max_attempts": job.max_attempts,
                        "arguments": arguments_shape(job.args, job.kwargs),
                    },
                )
                try:
                    return get_result(job)
                except Exception as raised:
                    failure = after_error(job, raised)
                    outcome = failure.transition.outcome
                    if outcome in reported:
                        scope.set_tag("sqlqueue.outcome", outcome)
                        scope.set_level("error" if outcome == FAIL.outcome else "warning")
                        sentry_sdk.capture_exception(failure.error)
                    raise

        return wrapper

    return factory


def arguments_shape(args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The types of a job's arguments, by position and by name, without their values:
    ``{"args": ["int", "str"], "kwargs": {"notify": "bool"}}``."""
    return {
        "args": [type(value).__name__ for value in args],
        "kwargs": {name: type(value).__name__ for name, value in kwargs.items()},
    }


#: Reports each job's final failure.
middleware = reporting(every_attempt=False)
#: Reports every failed attempt: a retried one as a warning, the last as an error.
every_attempt_middleware = reporting(every_attempt=True)
