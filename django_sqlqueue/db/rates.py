"""Rate limits, taken in the claim's transaction: a token bucket per
``SQLQUEUE_RATE_LIMITS`` entry, one row each, refilled by the database's clock and
drawn from under the row's lock, so that every worker and host shares one bucket.

A job starts only with a token: one the bucket lacks stays ``READY``, unclaimed, and
never waits in a worker's hands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from django.apps import apps
from django.db import models

from django_sqlqueue.conf import conf
from django_sqlqueue.db.clock import DatabaseNow, database_now
from django_sqlqueue.db.keys.concurrency import lock_rows
from django_sqlqueue.rules.rates import Rate
from django_sqlqueue.rules.registry import registered_tasks

if TYPE_CHECKING:
    import datetime

    from django_sqlqueue.models import RateBucket

#: Registered task names to the name and rate of their limit.
Limited = dict[str, tuple[str, Rate]]


C = TypeVar("C")


def limited_tasks() -> Limited:
    """The registered tasks that have a configured rate limit; none without the setting."""
    limits = conf.SQLQUEUE_RATE_LIMITS
    if not limits:
        return {}
    return {
        task.name: (task.rate_limit, limits[task.rate_limit])
        for task in registered_tasks()
        if task.rate_limit is not None and task.rate_limit in limits
    }


def with_tokens(using: str, limited: Limited) -> models.Q:
    """Jobs whose task's bucket, read without a lock, holds a token now: the jobs of an
    empty bucket are left out of the candidates, so they hold back no others."""
    if not limited:
        return models.Q()
    rates = dict(limited.values())
    rows = _buckets(using).filter(pk__in=list(rates)).annotate(now=DatabaseNow())
    empty = {row.pk for row in rows if _level(row, rates[row.pk], row.now) < 1}
    return ~models.Q(task__in=[task for task, (name, _) in limited.items() if name in empty])


def draw(using: str, candidates: Sequence[C], limited: Limited) -> list[C]:
    """The ``candidates`` (in claim order) that get a token, the tokens taken.

    Call it inside the claim's transaction: it locks the buckets' rows in name order,
    refills them for the time since their last draw, and writes what is left."""
    rates = {limited[job.task][0]: limited[job.task][1] for job in candidates if job.task in limited}  # type: ignore[attr-defined]
    if not rates:
        return list(candidates)
    buckets = _buckets(using)
    rows = lock_rows(
        buckets,
        sorted(rates),
        lambda name: buckets.model(name=name, tokens=rates[name].burst, updated_at=DatabaseNow()),
    )
    now = database_now(using)
    tokens = {row.pk: _level(row, rates[row.pk], now) for row in rows}
    admitted = []
    for job in candidates:
        name = limited[job.task][0] if job.task in limited else None  # type: ignore[attr-defined]
        if name is not None:
            if tokens[name] < 1:
                continue
            tokens[name] -= 1
        admitted.append(job)
    for row in rows:
        buckets.filter(pk=row.pk).update(tokens=tokens[row.pk], updated_at=max(row.updated_at, now))
    return admitted


def _level(row: RateBucket, rate: Rate, now: datetime.datetime) -> float:
    """The tokens in a bucket at ``now``: what it held, plus what flowed in since, up to the burst."""
    elapsed = max(0.0, (now - row.updated_at).total_seconds())
    return min(float(rate.burst), row.tokens + elapsed * rate.per_second)


def _buckets(using: str) -> models.QuerySet[RateBucket]:
    return apps.get_model("django_sqlqueue", "RateBucket")._base_manager.using(using)
