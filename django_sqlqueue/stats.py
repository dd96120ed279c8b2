"""Figures about the queue that more than one place shows: the admin's overview and
``sqlqueue_health`` read them from the same queries."""

from __future__ import annotations

import datetime

from django.db.models import Min

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.managers import JobQuerySet


def queue_lags(jobs: JobQuerySet) -> dict[str, datetime.timedelta]:
    """Per queue with a due ``READY`` job in ``jobs``, how long the oldest has waited, by
    the database's clock. Reads the small partial index of ready jobs only."""
    rows = jobs.ready().values_list("queue").annotate(lag=DatabaseNow() - Min("run_at")).order_by()
    return dict(rows)
