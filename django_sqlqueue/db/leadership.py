"""The maintenance lease: which ``runworkers`` supervisor rescues, ticks schedules and
prunes, one at a time, on the database's clock.

One row per role. A supervisor takes the lease, or renews it, with one compare-and-set
``UPDATE … WHERE holder = me OR expires_at < now``: the holder renews before it
expires, and when the holder dies any other takes it over once it has expired. Nothing
depends on it for correctness (a tick fires once by its own compare-and-set, a rescue
is fenced): two leaders for a moment only do the same harmless work twice."""

from __future__ import annotations

import datetime

from django.db import IntegrityError, transaction
from django.db.models import Case, F, Q, When

from django_sqlqueue.db.clock import DatabaseNow, DatabaseNowPlus
from django_sqlqueue.models import Leader

MAINTENANCE = "maintenance"


def acquire(holder: str, lease: datetime.timedelta, using: str, role: str = MAINTENANCE) -> bool:
    """Take ``role``'s lease for ``lease`` from now, or renew it; whether ``holder`` holds it."""
    rows = Leader.objects.using(using)
    # ``acquired_at`` first: MySQL assigns left to right, so it must read the old holder.
    taken = rows.filter(Q(holder=holder) | Q(expires_at__lt=DatabaseNow()), role=role).update(
        acquired_at=Case(When(holder=holder, then=F("acquired_at")), default=DatabaseNow()),
        holder=holder,
        expires_at=DatabaseNowPlus(lease),
    )
    if taken:
        return True
    try:
        with transaction.atomic(using=using):
            rows.create(role=role, holder=holder, acquired_at=DatabaseNow(), expires_at=DatabaseNowPlus(lease))
    except IntegrityError:
        return False  # someone else holds it
    return True


def release(holder: str, using: str, role: str = MAINTENANCE) -> None:
    """Give the lease up at once (a supervisor stopping), so another takes it at its next try."""
    Leader.objects.using(using).filter(role=role, holder=holder).update(expires_at=DatabaseNowPlus(-_MOMENT))


def expires_in(using: str, role: str = MAINTENANCE) -> float | None:
    """Seconds until ``role``'s lease runs out, by the database's clock (below 0 once it
    has); None when nobody ever took it. A follower tries again at that moment, so that
    a dead leader is replaced as its lease ends."""
    row = Leader.objects.using(using).filter(role=role).annotate(now=DatabaseNow()).values("expires_at", "now").first()
    return None if row is None else (row["expires_at"] - row["now"]).total_seconds()


def current(using: str, role: str = MAINTENANCE) -> Leader | None:
    """The holder of ``role``'s lease while it has not expired, by the database's clock."""
    return Leader.objects.using(using).filter(role=role, expires_at__gte=DatabaseNow()).first()


_MOMENT = datetime.timedelta(microseconds=1)
