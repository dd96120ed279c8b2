"""The demo's tasks: ``process_payload`` for ``manage.py demo``'s producers and
consumers, ``add`` and ``fail`` for the page that enqueues a job and for the failed
jobs the demo leaves in the admin."""

from __future__ import annotations

import time

from django_sqlqueue import job


@job
def add(a: int, b: int) -> int:
    """A task with a result."""
    return a + b


@job(name="demo.fail")
def fail(message: str) -> None:
    """A task that always raises: what the admin triages."""
    raise RuntimeError(message)


@job(queue="demo")
def process_payload(d: str, e: str) -> int:
    """The demo's unit of work: a short sleep standing in for real processing."""
    time.sleep(0.002)
    return len(d) + len(e)
