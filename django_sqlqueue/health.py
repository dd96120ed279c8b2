"""Whether the queue is working, in words: what ``manage.py sqlqueue_health`` asks for
container probes and monitoring. Each problem is one line; none means healthy."""

from __future__ import annotations

import datetime
from typing import NamedTuple

from django.db import DatabaseError, connections

from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.management.migrated import unapplied_migrations
from django_sqlqueue.models import Job, Worker
from django_sqlqueue.stats import queue_lags


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
    alias = queue_db(Job)
    if problem := database_problem(alias):
        return Health([problem])
    problems = []
    alive = Worker.objects.using(alias).alive().count()
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


def database_problem(alias: str) -> str | None:
    """Why the queue's tables on ``alias`` cannot be read, in one line: the database does
    not answer, or the queue's migrations are not applied; None when they can."""
    try:
        # A query, not just a connection: a connection kept from before may be dead.
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
        unapplied = unapplied_migrations()
    except DatabaseError as error:
        return does_not_answer(alias, error)
    if unapplied:
        return f"The queue's migrations are not applied ({', '.join(unapplied)}): run manage.py migrate."
    return None


def does_not_answer(alias: str, error: DatabaseError) -> str:
    """One line, as a probe's log shows it: psycopg's message runs over several."""
    return f"The database {alias!r} does not answer: {' '.join(str(error).split())}"
