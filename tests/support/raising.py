"""User code that raises wherever the runner calls it, as code written for web requests
does when a worker runs it (it reads a request's context, which a worker has none of):
an enqueue hook (``SQLQUEUE_ENQUEUE_HOOKS``) and signal receivers. A worker process
started with ``SQLQUEUE_TEST_RAISING_RECEIVERS`` set connects the receivers
(``tests.testapp.apps``)."""

from __future__ import annotations

from typing import Any

from django_sqlqueue import signals


class NoRequest(RuntimeError):
    """What the hostile user code raises."""


def hook(job: Any) -> None:
    """An enqueue hook that wants the current request."""
    raise NoRequest(f"no request to take an id from for job {job.pk or 'new'} of {job.task}")


def receiver(sender: Any, **kwargs: Any) -> None:
    """A receiver that wants the current request."""
    raise NoRequest("no request to log this job's end under")


def connect_receivers() -> None:
    """Connect :func:`receiver` to every signal the worker sends about a job."""
    for signal in (signals.job_started, signals.job_finished, signals.job_unblocked, *signals.job_ended.values()):
        signal.connect(receiver, dispatch_uid=f"raising-{id(signal)}")
