"""What a person may do to jobs from the admin: retry, cancel, run now, delete.

Each change walks its jobs in primary-key chunks, one short transaction per chunk:
the chunk's rows are locked (``select_for_update``; on SQLite the transaction's write
lock), the jobs still in a state the change applies to are written with one
``UPDATE`` on the database's clock, and the others are counted as skipped. So a
change races safely with workers (a job a worker claimed meanwhile is skipped, never
overwritten) and a million jobs never sit in one transaction."""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import DatabaseError, models, transaction
from django.http import HttpRequest

from django_sqlqueue.db.keys import unique
from django_sqlqueue.db.lifecycle import allowed
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job
from django_sqlqueue.rules import lifecycle

if TYPE_CHECKING:
    from django.db.models.query import QuerySet

    from django_sqlqueue.managers import JobManager

#: Rows locked and written per transaction.
CHUNK_SIZE = 1000
#: Jobs left as they were that the message names, each with the job holding its key.
NAMED = 10
#: Jobs that get an admin log entry of their own per change; past this, one summary
#: entry records how many more were changed, so retrying a million jobs does not also
#: write a million log rows.
LOGGED_JOBS = 1000


@dataclass(frozen=True)
class Change:
    """One thing a person can do to jobs: which jobs it applies to and what it writes."""

    name: str
    #: Its button.
    label: str
    #: Past tense, for the message to the user and the admin log.
    done: str
    permission: str
    applies: Callable[[], models.Q]
    #: Why a job it does not apply to was skipped.
    skipped: str
    #: Whether it deletes the jobs (``Job.objects.delete_jobs``).
    deletes: bool = False
    #: Whether it cancels through ``Job.objects.cancel`` (ready jobs cancelled, running
    #: ones asked to stop).
    cancels: bool = False
    #: Whether it retries the jobs (``Job.objects.retry``), so that a job's ``unique_key``
    #: may be held by another active job: such a job is left as it is and counted in
    #: ``held``. A change that neither deletes, cancels nor retries runs jobs now
    #: (``Job.objects.run_now``).
    activates: bool = False
    #: Whether it brings back, with the jobs it retries, the jobs their ends cancelled
    #: (``db/dependents.py``); a retry without says how many it leaves cancelled.
    retries_dependents: bool = False


RETRY = Change(
    name="retry",
    label="Retry",
    done="Retried",
    permission="retry",
    applies=lambda: functools.reduce(operator.or_, map(allowed, lifecycle.ADMIN_RETRIES)),
    skipped="not failed or cancelled",
    activates=True,
)
RETRY_WITH_DEPENDENTS = dataclasses.replace(
    RETRY, name="retry_with_dependents", label="Retry with cancelled dependents", retries_dependents=True
)
CANCEL = Change(
    name="cancel",
    label="Cancel",
    done="Cancelled",
    permission="cancel",
    applies=lambda: allowed(lifecycle.CANCEL) | allowed(lifecycle.REQUEST_CANCEL),
    skipped="not ready or running, or already asked to stop",
    cancels=True,
)
RUN_NOW = Change(
    name="run_now",
    label="Run now",
    done="Brought forward",
    permission="run_now",
    applies=lambda: allowed(lifecycle.RUN_NOW),
    skipped="not ready or already due",
)
# A job a worker holds is not deleted under it: its outcome would have nowhere to go.
DELETE = Change(
    name="delete",
    label="Delete",
    done="Deleted",
    permission="delete",
    applies=lambda: allowed(lifecycle.DELETE),
    skipped="running",
    deletes=True,
)
CHANGES = {change.name: change for change in (RETRY, RETRY_WITH_DEPENDENTS, CANCEL, RUN_NOW, DELETE)}


@dataclass
class Tally:
    """How many jobs a change wrote and how many it skipped."""

    done: int = 0
    skipped: int = 0
    #: Running jobs asked to stop (by Cancel), not counted in ``done``.
    requested: int = 0
    #: Jobs left as they were because another active job holds their ``unique_key``.
    held: int = 0
    #: The first :data:`NAMED` of those, each with the id of the job holding its key
    #: (None when that one ended since).
    held_by: list[tuple[int, int | None]] = dataclasses.field(default_factory=list)
    #: Jobs a retried job's end had cancelled: brought back to wait for it again
    #: (``retries_dependents``), else left cancelled.
    dependents: int = 0
    #: Jobs a retried job's end had cancelled left cancelled below one left for its key.
    below_held: int = 0
    #: The database error that stopped the change (its chunk then wrote nothing), or "".
    failed: str = ""

    def add(self, other: Tally) -> None:
        """Count ``other`` (a chunk's, once it committed) in."""
        self.done += other.done
        self.skipped += other.skipped
        self.requested += other.requested
        self.held += other.held
        self.held_by = (self.held_by + other.held_by)[:NAMED]
        self.dependents += other.dependents
        self.below_held += other.below_held

    def hold(self, alias: str, keys: Mapping[int, str | None]) -> None:
        """Count in the jobs ``keys`` (id to unique key) left as they were, naming the
        jobs that hold their keys."""
        self.held += len(keys)
        shown = dict(list(keys.items())[: max(NAMED - len(self.held_by), 0)])
        holding = unique.holders(Job, alias, {key for key in shown.values() if key is not None})
        self.held_by += [(pk, getattr(holding.get(key or ""), "pk", None)) for pk, key in shown.items()]


def apply(change: Change, jobs: QuerySet[Job], request: HttpRequest) -> Tally:
    """Apply ``change`` to every job in ``jobs`` (any filtered queryset), chunk by chunk,
    recording each changed job in the admin log as ``request.user``. A database error
    (the connection lost, a deadlock) stops it: the chunk it struck is rolled back
    whole, the chunks before stay done, and the tally says so (``failed``)."""
    tally = Tally()
    try:
        _apply(change, jobs, request, tally)
    except DatabaseError as error:
        # Its first line: a lost connection's message goes on about the server.
        tally.failed = next(iter(str(error).strip().splitlines()), type(error).__name__)
    return tally


def _apply(change: Change, jobs: QuerySet[Job], request: HttpRequest, tally: Tally) -> None:
    """:func:`apply`, counting into ``tally`` as each chunk commits."""
    alias = queue_db(Job)
    jobs = jobs.using(alias)
    last = None
    while True:
        with transaction.atomic(using=alias):
            chunk = jobs.order_by("pk").select_for_update()
            if last is not None:
                chunk = chunk.filter(pk__gt=last)
            locked = list(chunk.values_list("pk", flat=True)[:CHUNK_SIZE])
            if not locked:
                return
            last = locked[-1]
            targets = Job.objects.using(alias).filter(pk__in=locked).filter(change.applies())
            eligible = list(targets.only("pk", "task", "status", "unique_key"))
            # The chunk's own tally, counted in once it has committed, never before.
            done = Tally(skipped=len(locked) - len(eligible))
            manager = Job.objects.db_manager(alias)
            if change.activates:
                eligible = _retry(change, manager, eligible, alias, done)
            if eligible:
                _log(change, request, eligible, already_logged=tally.done)
                if change.cancels:
                    done.done, done.requested = manager.cancel(job.pk for job in eligible)
                elif change.deletes:
                    manager.delete_jobs([job.pk for job in eligible])
                elif not change.activates:  # retry wrote those
                    manager.run_now(manager.filter(pk__in=[job.pk for job in eligible]))
            if not change.cancels:
                done.done = len(eligible)
        tally.add(done)


def _retry(change: Change, manager: JobManager[Job], eligible: list[Job], alias: str, done: Tally) -> list[Job]:
    """Retry ``eligible`` (``Job.objects.retry``), counting into ``done`` the jobs and
    the dependents another job's unique key keeps out, and the dependents brought back
    or left cancelled. The jobs retried."""
    retried = manager.retry(eligible, with_dependents=change.retries_dependents)
    done.hold(alias, retried.held)
    done.dependents = retried.dependents
    done.hold(alias, retried.dependents_held)
    done.below_held = retried.below_held
    return [job for job in eligible if job.pk not in retried.held]


def _log(change: Change, request: HttpRequest, jobs: list[Job], *, already_logged: int) -> None:
    """One entry per job up to ``LOGGED_JOBS``, then one entry per chunk for the rest."""
    room = max(LOGGED_JOBS - already_logged, 0)
    user = request.user.pk
    assert user is not None, "the admin's views are for signed-in users"
    flag = DELETION if change.deletes else CHANGE
    if room:
        LogEntry.objects.log_actions(user_id=user, queryset=jobs[:room], action_flag=flag, change_message=change.done)
    if rest := jobs[room:]:
        LogEntry.objects.create(
            user_id=user,
            content_type=ContentType.objects.get_for_model(Job),
            object_id=None,
            object_repr=f"{len(rest)} more jobs, #{rest[0].pk} to #{rest[-1].pk}",
            action_flag=flag,
            change_message=f"{change.done} {len(rest)} more jobs",
        )


def report(change: Change, tally: Tally) -> str:
    """What to tell the user: done and skipped counts, in words."""
    message = f"{change.done} {_jobs(tally.done)}."
    if tally.failed:
        message = (
            f"{change.label} stopped: the database failed ({tally.failed}). The jobs it was changing"
            f" then were left as they were: select them and try again. Before that: {message}"
        )
    if tally.requested:
        message += f" Asked {tally.requested} running {'job' if tally.requested == 1 else 'jobs'} to stop."
    if tally.skipped:
        message += f" Skipped {_jobs(tally.skipped)}: {change.skipped}."
    if tally.held:
        message += f" Left {_jobs(tally.held)} as they were: another ready or running job holds their unique key"
        named = "; ".join(
            f"job {pk}: its unique key is held by {f'job {holder}' if holder else 'a job that has ended since'}"
            for pk, holder in tally.held_by
        )
        message += f" ({named}{'; …' if tally.held > len(tally.held_by) else ''})."
    if tally.below_held:
        message += f" {_jobs(tally.below_held).capitalize()} waiting on those stay cancelled with them."
    if tally.dependents and change.retries_dependents:
        message += f" {_jobs(tally.dependents).capitalize()} their ends had cancelled wait for them again."
    elif tally.dependents:
        message += (
            f" {_jobs(tally.dependents).capitalize()} their ends had cancelled stay cancelled:"
            f" “{RETRY_WITH_DEPENDENTS.label}” retries those too."
        )
    return message


def _jobs(count: int) -> str:
    return f"{count} job" if count == 1 else f"{count} jobs"
