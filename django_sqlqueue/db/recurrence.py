"""The statements of recurring jobs: writing ``SQLQUEUE_SCHEDULE`` to its rows, writing
the entries defined in the admin, and enqueueing the ticks that are due.

Each tick fires once however many supervisors check: a supervisor moves a row's
``last_tick_at`` from the value it read to the tick it fires with a compare-and-set
``UPDATE``, in the transaction that inserts the tick's job. Two supervisors that read
the same row both try; the database lets one update it (the other's ``UPDATE`` waits
for the first to commit, then finds ``last_tick_at`` changed and matches no row) and
only the one that updated inserts. What is due is decided by the database's clock.

The compare-and-set is keyed by the row (its primary key), never by what it says, and
also compares ``revision``, which every write of the definition (and "run now") moves
on under the row's lock: a tick that read a row before an edit matches no row,
enqueues nothing, and the next check (a second later) reads the edit. An edit keeps
``last_tick_at`` (read under the lock), so a tick already fired is never fired again,
and a tick not yet fired fires once, as the edited entry says, unless the edit changes
when the entry runs (``cron``, ``every``, ``tz``) or enables it: then it ticks from
the edit on."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from django_sqlqueue.db.clock import DatabaseNow, database_now
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.exceptions import InvalidJobError, SQLQueueError, UnknownTaskError
from django_sqlqueue.models import Job, Schedule
from django_sqlqueue.rules.recurrence import DefinedIn, Entry, due, parse_entry, wall_time
from django_sqlqueue.rules.registry import get_task
from django_sqlqueue.rules.user_code import runner_enqueues
from django_sqlqueue.rules.validation import arguments_problem, job_options_problem

logger = logging.getLogger(__name__)

#: Start-up syncs that collide (two supervisors creating the same row) are tried again.
SYNC_ATTEMPTS = 3
#: How many of its last jobs a row keeps (``recent_jobs``), for the admin's last runs.
RECENT_JOBS = 10
#: The columns that define an entry: an edit writes these, never the ticks' own.
DEFINITION = ("key", "task", "expression", "cron", "every", "tz", "args", "kwargs", "queue", "priority", "missed")


def entry_of(row: Schedule) -> Entry:
    """The entry a row holds, validated as settings are: a row written outside the admin's
    form (or a cron row once cronsim is gone) raises ``ImproperlyConfigured`` naming it."""
    raw: dict[str, Any] = {
        "task": row.task,
        "tz": row.tz,
        "args": row.args,
        "kwargs": row.kwargs,
        "missed": row.missed,
        "enabled": row.enabled,
    }
    if row.cron:
        raw["cron"] = row.cron
    else:
        raw["every"] = row.every
    if row.queue:
        raw["queue"] = row.queue
    if row.priority is not None:
        raw["priority"] = row.priority
    return parse_entry(row.key, raw, row.tz, source="Schedule")


@dataclass(frozen=True)
class Refusal:
    """Why every tick of an entry would be refused: ``arguments`` when it is only that its
    args and kwargs do not fit its task's function (the check's E037, else E019)."""

    problem: str
    arguments: bool = False


def refusal(entry: Entry) -> Refusal | None:
    """Why a tick of ``entry`` would enqueue nothing (its task is not registered in this
    process, its arguments or options are not a job's or do not fit the task), or None.
    The system checks ask it of settings' entries, the admin of the entries it saves and
    shows."""
    try:
        job = Job.objects.build(entry.task, entry.args, entry.kwargs, queue=entry.queue, priority=entry.priority)
        problem = arguments_problem(job.args, job.kwargs) or job_options_problem(queue=job.queue, priority=job.priority)
    except SQLQueueError as error:
        problem = str(error)
    if problem:
        return Refusal(problem)
    if unfit := get_task(job.task).binding_problem(job.args, job.kwargs):
        return Refusal(f"{unfit}.", arguments=True)
    return None


def row_problem(row: Schedule) -> str | None:
    """Why ``row`` enqueues nothing at its ticks, as the admin shows it; None when it can."""
    try:
        refused = refusal(entry_of(row))
    except ImproperlyConfigured as error:
        return str(error)
    return None if refused is None else refused.problem


def sync(entries: Mapping[str, Entry], using: str) -> None:
    """Make the settings' rows match ``entries`` (``SQLQUEUE_SCHEDULE``): create the new
    ones, ticking from now on; update the changed ones, keeping their last tick; delete
    the rows of entries no longer in settings. The rows defined in the admin are left as
    they are: an entry named as one of them is logged and not written.

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
    rows.filter(defined_in=DefinedIn.SETTINGS).exclude(key__in=list(entries)).delete()
    existing = {row.key: row for row in rows.select_for_update().filter(key__in=list(entries))}
    for entry in entries.values():
        row = existing.get(entry.key)
        if row is None:
            row = Schedule(key=entry.key, last_tick_at=now, enabled=entry.enabled)
        elif row.defined_in != DefinedIn.SETTINGS:
            logger.error(
                "SQLQUEUE_SCHEDULE[%r] is not written: a schedule defined in the admin has its name. "
                "Rename one of them.",
                entry.key,
            )
            continue
        elif not entry.enabled:
            row.enabled = False
        row.revision += 1
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


def define(row: Schedule, using: str) -> None:
    """Write ``row``, an entry defined in the admin (new, or the one it edits), in one
    transaction, under the row's lock; its definition must be valid (``entry_of``).

    A new row ticks from now on. An edit moves ``revision`` on (a tick that read the row
    before fires nothing) and writes only the definition: the ticks' columns are the
    locked row's, never what the form read, so an edit saved after a tick fired cannot
    fire it again. Changing when it runs (``cron``, ``every``, ``tz``) or enabling it
    makes it tick from the edit on, as enabling does: no tick of the old timing, nor of
    the new one before the edit, is enqueued for it."""
    entry = entry_of(row)
    with transaction.atomic(using=using):
        now = database_now(using)
        if row.pk is None:
            row.defined_in = DefinedIn.ADMIN
            row.last_tick_at = now
        else:
            current = Schedule.objects.using(using).select_for_update().get(pk=row.pk)
            retimed = (current.cron, current.every, current.tz) != (row.cron, row.every, row.tz)
            row.last_tick_at = now if retimed or (row.enabled and not current.enabled) else current.last_tick_at
            row.revision = current.revision + 1
        row.expression = entry.expression
        row.next_tick_at = _stored(next(entry.ticks_after(aware(row.last_tick_at))))
        if row.pk is None:
            row.save(using=using)
        else:
            ticks = ["enabled", "last_tick_at", "next_tick_at", "revision"]
            row.save(using=using, update_fields=[*DEFINITION, *ticks])


def due_rows(using: str) -> list[Schedule]:
    """The enabled rows whose next tick has come, by the database's clock."""
    return list(Schedule.objects.using(using).filter(enabled=True, next_tick_at__lte=DatabaseNow()).order_by("pk"))


def tick(using: str, logged: set[tuple[str, str]] | None = None) -> int:
    """Enqueue the due ticks of every enabled row; returns how many jobs were enqueued.

    A row that cannot enqueue (its task is not registered in this process, its
    arguments are refused, its definition is not valid) is logged and left as it is: it
    fires nothing, and no other row waits for it. A caller that ticks every second
    passes ``logged``, the problems it has logged, so that each is logged once rather
    than every tick, and again only after its row has fired in between. An enqueue hook
    that raises on a tick's job is logged, and the job enqueued without that hook's
    changes (``rules.user_code.runner_enqueues``): the tick is not lost, nor retried
    every second."""
    logged = set() if logged is None else logged
    enqueued = 0
    for row in due_rows(using):
        try:
            with runner_enqueues():
                enqueued += retry_transient(using, lambda row=row: _fire(row, using))  # type: ignore[misc]
        except (UnknownTaskError, InvalidJobError, ImportError, ImproperlyConfigured) as error:
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
    won = (
        Schedule.objects.using(using)
        .filter(pk=row.pk, enabled=True, last_tick_at=row.last_tick_at, revision=row.revision)
        .update(**changes)
    )
    if not won or not jobs:
        return 0
    _enqueue(row, jobs, using)
    return len(jobs)


def run_now(row: Schedule, using: str) -> Job:
    """Enqueue one job for ``row`` (locked by the caller) now, outside its ticks (the
    admin's "run now"), in the caller's transaction; its ticks go on as before. It moves
    ``revision`` on: a tick that read the row before writes nothing (and fires at the
    next check), so that it cannot drop this job from the row's last jobs."""
    entry = entry_of(row)
    job = Job.objects.build(entry.task, entry.args, entry.kwargs, queue=entry.queue, priority=entry.priority)
    _enqueue(row, [job], using, last_run_at=DatabaseNow(), revision=F("revision") + 1)
    return job


def _enqueue(row: Schedule, jobs: list[Job], using: str, **changes: Any) -> None:
    """Insert ``jobs``, and point the row at the last and at its last jobs (with
    ``changes``). Those are inserted one by one (one per tick, unless it catches up), so
    that every database returns their ids (MySQL returns none for a multi-row insert).
    The row's last jobs are the ones it was read with: current, as no other write can
    have come in between (a tick's compare-and-set checked it; "run now" holds its lock)."""
    manager = Job.objects.db_manager(using)
    if len(jobs) > RECENT_JOBS:
        manager.enqueue_many(jobs[:-RECENT_JOBS])
    for job in jobs[-RECENT_JOBS:]:
        manager.enqueue_many([job])
    recent = [job.pk for job in reversed(jobs[-RECENT_JOBS:])] + list(row.recent_jobs)
    Schedule.objects.using(using).filter(pk=row.pk).update(
        last_job_id=jobs[-1].pk, recent_jobs=recent[:RECENT_JOBS], **changes
    )


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
