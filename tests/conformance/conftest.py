"""The harness's host, installed for each proof; the signal receivers its breaker fails;
retries due at once, so that one pass of recovery runs them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from tests.integration.conftest import child_env, python, start_workers

__all__ = ["child_env", "python", "start_workers"]  # the runworkers proof starts processes


@pytest.fixture(autouse=True)
def harness_host() -> Iterator[None]:
    """Our host (``host.py``) for the duration of one proof."""
    from due_work_harness.host import hosted

    from tests.conformance.host import WORKER_SIGNALS, our_host

    def receiver(**_kwargs: Any) -> None:
        """A project's receiver of the worker's signals: the harness fails each in turn."""

    for signal in WORKER_SIGNALS:
        signal.connect(receiver, weak=False, dispatch_uid="due-work-harness")
    try:
        with hosted(our_host()), override_settings(SQLQUEUE_RETRY_BACKOFF=0.001, SQLQUEUE_RETRY_BACKOFF_MAX=0.001):
            yield
    finally:
        for signal in WORKER_SIGNALS:
            signal.disconnect(dispatch_uid="due-work-harness")
