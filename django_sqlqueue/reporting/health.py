"""Whether the queue is working, in words: what ``manage.py sqlqueue_health`` asks for
container probes and monitoring. Each problem is one line; none means healthy."""

from __future__ import annotations

import datetime
from typing import NamedTuple

from django_sqlqueue.db.migrated import tables_problem
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job, Worker
from django_sqlqueue.reporting.stats import queue_lags


class Health(NamedTuple):
    """What was found: the problems, and the figures they were judged on."""

    problems: list[str]
    workers_alive: int = 0
    #: How long the oldest due ``READY`` job of each queue that has one has waited.
    lags: dict[str, datetime.timedelta] = {}


def health(*, min_workers: int, max_lag: float | None) -> Health:
    """Asks the database that holds the jobs, in order: does it answer, are the queue's
    migrations applied, are ``min_workers`` worker processes alive (a heartbeat within
    ``SQLQUEUE_LEASE``), and has no queue's oldest due job waited more than ``max_lag``
    seconds (not asked when None). A database that does not answer, or lacks the
    tables, is the only problem reported: nothing else can be asked."""
    if problem := tables_problem():
        return Health([problem])
    problems = []
    alive = Worker.objects.using(queue_db(Job)).alive().count()
    if alive < min_workers:
        problems.append(f"{alive} worker process(es) alive, fewer than {min_workers}.")
    lags = queue_lags(Job.objects.on_queue_db())
    if max_lag is not None:
        problems += [
            f"Queue {queue!r}: its oldest due job has waited {lag.total_seconds():.0f} s, more than {max_lag:g} s."
            for queue, lag in sorted(lags.items())
            if lag.total_seconds() > max_lag
        ]
    return Health(problems, alive, lags)
