"""Errors that pass: run a short transaction again when the database gave up on it for
a reason that passes (a deadlock, a lock wait timeout, SQLite's write lock held too
long), and carry a long-lived process through a database that is away for a while."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import Error, OperationalError, close_old_connections, connections, transaction

from django_sqlqueue.db.engines.errors import is_transient, is_unavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")
F = TypeVar("F")

ATTEMPTS = 8


def retry_transient(using: str, work: Callable[[], T], *, atomic: bool = True) -> T:
    """``work()`` inside ``transaction.atomic(using=using)``, tried again on a transient error.

    ``atomic=False`` is for work that is one statement: outside a transaction it is
    atomic by itself, and skipping ``BEGIN``/``COMMIT`` saves two round trips (a batch's
    outcomes are written this way). Inside a caller's transaction there is nothing safe
    to retry, so the error is raised."""

    def attempt() -> T:
        if not atomic:
            return work()
        with transaction.atomic(using=using):
            return work()

    return retried(attempt, OperationalError, may_retry=lambda: not connections[using].in_atomic_block)


def retried(
    work: Callable[[], T],
    errors: type[Exception],
    *,
    may_retry: Callable[[], bool] = lambda: True,
    undo: Callable[[], None] = lambda: None,
) -> T:
    """``work()``, run again (``ATTEMPTS`` times in all) when what it raises is an
    instance of ``errors``, is transient, and ``may_retry()`` allows it. ``undo()``
    first ends what the failed attempt left open (a bare driver connection's
    transaction: the benchmark's ceilings take a deadlock as the app does)."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return work()
        except errors as error:
            if attempt == ATTEMPTS or not is_transient(error) or not may_retry():
                raise
        undo()
        # Jittered so that the claimers that collided do not collide again.
        time.sleep(random.uniform(0, 0.005 * 2**attempt))
    raise AssertionError("unreachable")


def unless_unavailable(work: Callable[[], T], fallback: F, *, by: str) -> T | F:
    """``work()``, or ``fallback`` while its database is unavailable (a restart, a failover, a
    killed connection: logged as met ``by`` the caller, which tries again at its next turn), so that a
    long-lived process carries on through an outage. Any other database error (a missing
    table) is raised. Its connections are closed afterwards if broken or past their age,
    as Django does after a request (``close_old_connections``)."""
    try:
        return work()
    except Error as error:
        if not is_unavailable(error):
            raise
        logger.warning("Database error in %s (%s); retrying", by, error)
        return fallback
    finally:
        close_old_connections()
