"""Tasks the demo and the tests run."""

from __future__ import annotations

import os
import time

from django.db import transaction

from django_sqlqueue import job


@job
def add(a: int, b: int) -> int:
    """A task with a result."""
    return a + b


@job(queue="mail", priority=5, max_attempts=7, timeout=30)
def send_welcome(user_id: int, *, greeting: str = "Hello") -> None:
    """A task with every option set by its decorator."""


@job(name="demo.fail")
def fail(message: str) -> None:
    """A task that always raises: what the admin triages."""
    raise RuntimeError(message)


@job
def record(token: str, pause: float = 0.0) -> None:
    """Insert the token's receipt; a second run counts itself instead of failing.
    ``pause`` stands in for the work, so that a test has time to kill workers mid-run."""
    from django.db.models import F

    from testproject.demo.models import Receipt

    time.sleep(pause)
    with transaction.atomic():
        _, created = Receipt.objects.get_or_create(token=token)
        if not created:
            Receipt.objects.filter(token=token).update(runs=F("runs") + 1)


@job
def sleep(seconds: float) -> float:
    """Takes its time: for timeouts, graceful shutdown and slow-job batching."""
    time.sleep(seconds)
    return seconds


@job(max_attempts=2)
def crash() -> None:
    """A poison job: kills its worker process every time it runs."""
    os._exit(3)


@job(queue="demo")
def process_payload(d: str, e: str) -> int:
    """The demo's unit of work: a short sleep standing in for real processing."""
    time.sleep(0.002)
    return len(d) + len(e)
