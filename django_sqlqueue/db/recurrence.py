"""The statements of recurring jobs: writing ``SQLQUEUE_SCHEDULE`` to its rows, and
enqueueing the ticks that are due.

Each tick fires once however many supervisors check: a supervisor moves a row's
``last_tick_at`` from the value it read to the tick it fires with a compare-and-set
``UPDATE``, in the transaction that inserts the tick's job. Two supervisors that read
the same row both try; the database lets one update it (the other's ``UPDATE`` waits
for the first to commit, then finds ``last_tick_at`` changed and matches no row) and
only the one that updated inserts. What is due is decided by the database's clock."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping

from django.conf import settings
from django.db import IntegrityError
from django.utils import timezone

from django_sqlqueue.db.clock import DatabaseNow, database_now
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.exceptions import InvalidJobError, UnknownTaskError
from django_sqlqueue.models import Job, Schedule
from django_sqlqueue.rules.recurrence import Entry, due, wall_time

logger = logging.getLogger(__name__)

#: Start-up syncs that collide (two supervisors creating the same row) are tried again.
SYNC_ATTEMPTS = 3


def entry_of(row: Schedule) -> Entry:
    """The entry a row holds (as the last sync wrote it)."""
    return Entry(
        key=row.key,
        task=row.task,
        cron=row.cron or None,
        every=None if row.every is None else datetime.timedelta(seconds=row.every),
        tz=row.tz,
        args=list(row.args),
        kwargs=dict(row.kwargs),
        queue=row.queue or None,
        priority=row.priority,
        enabled=row.enabled,
        missed=row.missed,
    )


def sync(entries: Mapping[str, Entry], using: str) -> None:
    """Make the rows match ``entries`` (``SQLQUEUE_SCHEDULE``): create the new ones,
    ticking from now on; update the changed ones, keeping their last tick; delete the
    rows of entries no longer in settings.

    ``enabled: False`` in settings disables a row; ``True`` (the default) leaves it as
    the admin last set it, and a new row starts enabled."""
    for attempt in range(1, SYNC_ATTEMPTS + 1):
        try:
            retry_transient(using, lambda: _sync(entries, using))
            return
        except IntegrityError:
            if attempt == SYNC_ATTEMPTS:
                raise


def _sync(entries: Mapping[str, Entry], using: str) -> None:
    now = database_now(using)
    rows = Schedule.objects.using(using)
    rows.exclude(key__in=list(entries)).delete()
    existing = {row.key: row for row in rows.select_for_update().filter(key__in=list(entries))}
    for entry in entries.values():
        row = existing.get(entry.key)
        if row is None:
            row = Schedule(key=entry.key, last_tick_at=now, enabled=entry.enabled)
        elif not entry.enabled:
            row.enabled = False
        row.task = entry.task
        row.expression = entry.expression
        row.cron = entry.cron or ""
        row.every = None if entry.every is None else entry.every.total_seconds()
        row.tz = entry.tz
        row.args = entry.args
        row.kwargs = entry.kwargs
        row.queue = entry.queue or ""
        row.priority = entry.priority
        row.missed = entry.missed
        row.next_tick_at = _stored(next(entry.ticks_after(aware(row.last_tick_at))))
        row.save(using=using)


def due_rows(using: str) -> list[Schedule]:
    """The enabled rows whose next tick has come, by the database's clock."""
    return list(Schedule.objects.using(using).filter(enabled=True, next_tick_at__lte=DatabaseNow()).order_by("pk"))


def tick(using: str, logged: set[tuple[str, str]] | None = None) -> int:
    """Enqueue the due ticks of every enabled row; returns how many jobs were enqueued.

    A row that cannot enqueue (its task is not registered in this process, its
    arguments are refused) is logged and left as it is: it fires nothing, and no other
    row waits for it. A caller that ticks every second passes ``logged``, the problems
    it has logged, so that each is logged once rather than every tick, and again only
    after its row has fired in between."""
    logged = set() if logged is None else logged
    enqueued = 0
    for row in due_rows(using):
        try:
            enqueued += retry_transient(using, lambda row=row: _fire(row, using))  # type: ignore[misc]
        except (UnknownTaskError, InvalidJobError, ImportError) as error:
            problem = (row.key, f"{type(error).__name__}: {error}")
            if problem not in logged:
                logged.add(problem)
                logger.error("Schedule %r did not enqueue: %s (logged once until it fires)", *problem)
        else:
            logged.difference_update({problem for problem in logged if problem[0] == row.key})
    return enqueued


def _fire(row: Schedule, using: str) -> int:
    entry = entry_of(row)
    now = aware(database_now(using))
    ticks = due(entry, aware(row.last_tick_at), now)
    if ticks.last_tick is None:
        return 0
    # Built (and so checked) before anything is written: a refused job fires nothing.
    jobs = [
        Job.objects.build(
            entry.task, entry.args, entry.kwargs, queue=entry.queue, priority=entry.priority, run_at=_stored(at)
        )
        for at in ticks.enqueue
    ]
    changes: dict[str, object] = {
        "last_tick_at": _stored(ticks.last_tick),
        "next_tick_at": _stored(next(entry.ticks_after(ticks.last_tick))),
    }
    if ticks.enqueue:
        changes["last_run_at"] = _stored(ticks.enqueue[-1])
    won = Schedule.objects.using(using).filter(pk=row.pk, enabled=True, last_tick_at=row.last_tick_at).update(**changes)
    if not won or not jobs:
        return 0
    _enqueue(row, jobs, using)
    return len(jobs)


def run_now(row: Schedule, using: str) -> Job:
    """Enqueue one job for ``row`` now, outside its ticks (the admin's "run now"), in
    the caller's transaction; its ticks go on as before."""
    entry = entry_of(row)
    job = Job.objects.build(entry.task, entry.args, entry.kwargs, queue=entry.queue, priority=entry.priority)
    _enqueue(row, [job], using)
    Schedule.objects.using(using).filter(pk=row.pk).update(last_run_at=DatabaseNow())
    return job


def _enqueue(row: Schedule, jobs: list[Job], using: str) -> None:
    """Insert ``jobs`` and point the row at the last: inserted alone, so that every
    database returns its id (MySQL returns none for a multi-row insert)."""
    manager = Job.objects.db_manager(using)
    if len(jobs) > 1:
        manager.enqueue_many(jobs[:-1])
    manager.enqueue_many(jobs[-1:])
    Schedule.objects.using(using).filter(pk=row.pk).update(last_job_id=jobs[-1].pk)


def enable(rows: list[Schedule], using: str) -> None:
    """Enable ``rows`` (locked by the caller), ticking from now on: the ticks that
    passed while a row was disabled were not wanted, so none of them is missed."""
    now = database_now(using)
    for row in rows:
        row.enabled = True
        row.last_tick_at = now
        row.next_tick_at = _stored(next(entry_of(row).ticks_after(aware(now))))
        row.save(using=using, update_fields=["enabled", "last_tick_at", "next_tick_at"])


def aware(moment: datetime.datetime) -> datetime.datetime:
    """A stored time as the arithmetic takes it: with ``USE_TZ = False`` Django stores
    naive local times of ``TIME_ZONE``, whatever zone a request has activated (the
    admin's enable action runs in one)."""
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, timezone.get_default_timezone())


def shown(moment: datetime.datetime, tz: str) -> str:
    """A row's stored time (its next tick, its last run) as the admin and
    ``sqlqueue_schedule`` show it: :func:`~django_sqlqueue.rules.recurrence.wall_time` in the
    row's zone ``tz``."""
    return wall_time(aware(moment), tz)


def _stored(moment: datetime.datetime) -> datetime.datetime:
    """A computed (aware) time as Django stores it."""
    return moment if settings.USE_TZ else timezone.make_naive(moment, timezone.get_default_timezone())
