"""The shop's middleware around every attempt (``SQLQUEUE_MIDDLEWARE``)."""

from __future__ import annotations

import logging
import time

logger = logging.getLogger(__name__)


# [timed]
def timed(get_result):
    """Logs how long each attempt took, in the worker, whatever its outcome."""

    def wrapper(job):
        began = time.monotonic()
        try:
            return get_result(job)
        finally:
            took = time.monotonic() - began
            logger.info("%s took %.3f s", job.task, took)

    return wrapper


# [/timed]


# [retry-timeouts]
def retry_timeouts_once(get_result):
    """A task that timed out talking to a peer runs once more, at once, before
    its attempt counts as failed (and the retry rules take over)."""

    def wrapper(job):
        try:
            return get_result(job)
        except TimeoutError:
            return get_result(job)

    return wrapper


# [/retry-timeouts]
