"""The jobs table's QuerySet (adjectives that filter) and Manager (verbs that act).

:class:`JobManager` is built on ``enqueueing.EnqueueingManager``, the verbs that build
and enqueue jobs; here are those on jobs once written: claim, finish, cancel, expire
and release, and a person's changes (retry, run now, delete). These are the one door
for writes to jobs: the runner, the rescue, the admin and the testing helpers change
jobs only through them. The options of an enqueue (:class:`JobOptions`, :class:`PlainOptions`) are
defined with the building of a job, in ``db/building``, and importable from here."""

from __future__ import annotations

import copy
import functools
import itertools
import operator
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.db import models, transaction

from django_sqlqueue import signals
from django_sqlqueue.conf import conf
from django_sqlqueue.db import (
    batches,
    claiming,
    dependencies,
    dependents,
    editing,
    expiry,
    finished,
    finishing,
    rates,
    tagging,
    waiting,
)
from django_sqlqueue.db.building import JobOptions, PlainOptions
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.editing import Edit
from django_sqlqueue.db.keys import unique
from django_sqlqueue.db.keys.concurrency import with_free_slot
from django_sqlqueue.db.lifecycle import allowed, written
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.db.schema.table import JobT
from django_sqlqueue.managers.enqueueing import EnqueueingManager
from django_sqlqueue.rules import failures
from django_sqlqueue.rules.lifecycle import (
    ADMIN_RETRIES,
    CANCEL,
    CLAIM,
    DELETE,
    EXPIRE,
    RELEASE_CANCELLED,
    REQUEST_CANCEL,
    RUN_NOW,
    SUCCEED_AND_DELETE,
    JobStatus,
    Transition,
    admin_retry_transition,
)
from django_sqlqueue.rules.validation import claim_limit_problem

__all__ = ["CancelCount", "Edit", "JobManager", "JobOptions", "JobQuerySet", "PlainOptions", "Retried"]


class JobQuerySet(models.QuerySet[JobT]):
    """Filters over the jobs table."""

    def ready(self) -> JobQuerySet[JobT]:
        """Jobs waiting to run whose time has come by the database's clock."""
        return self.filter(_claimable())

    def in_queues(self, queues: Iterable[str] | None) -> JobQuerySet[JobT]:
        """Jobs on any of ``queues``; every job when ``queues`` is None."""
        return self if queues is None else self.filter(queue__in=list(queues))

    def tagged(self, *tags: str) -> JobQuerySet[JobT]:
        """Jobs that have every one of ``tags``, found through the tags' index
        (``JobTag``), however many jobs the table holds."""
        queryset = self
        for tag in tags:
            queryset = queryset.filter(tagging.tagged(self.model, tag))
        return queryset

    def in_claim_order(self) -> JobQuerySet[JobT]:
        """Higher priority first, then the earliest due, then the oldest."""
        return self.order_by(*claiming.CLAIM_ORDER)


@functools.cache
def _claimable() -> models.Q:
    """The rows a claim may move (``allowed(CLAIM)``), made once: a ``Q`` is resolved
    afresh by each query that uses it, and the claim's never changes."""
    return allowed(CLAIM)


class CancelCount(NamedTuple):
    """What :meth:`JobManager.cancel` did."""

    #: ``READY`` jobs now ``CANCELLED``.
    cancelled: int
    #: ``RUNNING`` jobs asked to stop (not counting those asked before).
    requested: int


@dataclass
class Retried:
    """What :meth:`JobManager.retry` did, beside the jobs it made active again."""

    #: The jobs left as they were because another active job holds their
    #: ``unique_key`` now, by id: their keys.
    held: dict[int, str | None] = field(default_factory=dict)
    #: Jobs the retried jobs' ends had cancelled: brought back to wait for them again
    #: (``with_dependents``), else left cancelled.
    dependents: int = 0
    #: The dependents left cancelled because another active job holds their key, by id:
    #: their keys (``with_dependents`` only).
    dependents_held: dict[int, str] = field(default_factory=dict)
    #: Dependents left cancelled below those.
    below_held: int = 0


class JobManager(EnqueueingManager[JobT]):
    """Enqueue, claim and finish jobs."""

    def get_queryset(self) -> JobQuerySet[JobT]:
        return JobQuerySet(self.model, using=self._db)

    def ready(self) -> JobQuerySet[JobT]:
        return self.get_queryset().ready()

    def tagged(self, *tags: str) -> JobQuerySet[JobT]:
        return self.get_queryset().tagged(*tags)

    def on_queue_db(self) -> JobQuerySet[JobT]:
        """Every job, read on the database the queue writes to (never a read replica)."""
        return self.get_queryset().using(queue_db(self.model, self._db))

    def claim(
        self,
        *,
        worker_id: str,
        queues: Iterable[str] | None = None,
        limit: int | None = None,
        filter: models.Q | None = None,
        skip_queues: Collection[str] = (),
    ) -> claiming.ClaimedJobs[JobT]:
        """Take up to ``limit`` ready jobs (default ``SQLQUEUE_BATCH_SIZE``) for ``worker_id``.

        The jobs come back ``RUNNING``, owned by the worker, with the attempt counted,
        in claim order. The claim commits at once (unless called inside an outer
        transaction): run the jobs after it returns, never inside it. ``filter`` is any
        ``Q`` on the jobs table. ``skip_queues`` are left out (the paused ones); when it
        is empty the statement is the same as without it."""
        limit = conf.SQLQUEUE_BATCH_SIZE if limit is None else limit
        if problem := claim_limit_problem(limit):
            raise ValueError(f"{problem}.")
        if not worker_id:
            raise ValueError("worker_id must name the worker that claims.")
        skip_queues = frozenset(skip_queues)
        queues = None if queues is None else [queue for queue in queues if queue not in skip_queues]
        jobs = self.on_queue_db()
        limited = rates.limited_tasks()

        def candidates() -> JobQuerySet[JobT]:
            ready = jobs.ready().in_queues(queues)
            ready = ready.filter(with_free_slot(self.model, ready.db))
            if limited:
                ready = ready.filter(rates.with_tokens(ready.db, limited))
            if skip_queues and queues is None:
                ready = ready.exclude(queue__in=list(skip_queues))
            if filter is not None:
                ready = ready.filter(filter)
            return ready.in_claim_order()

        # The same queues, or all but the same paused ones, make the same statement; a
        # caller's filter makes its own.
        cache_key: Hashable | None = None
        if filter is None:
            cache_key = ("all but", skip_queues) if queues is None else ("in", tuple(queues))
        # An index holds the ready jobs of all queues, or of one, in claim order.
        index_ordered = filter is None and (queues is None or len(set(queues)) == 1)
        return claiming.claim(
            claiming.Candidates(self.model, jobs.db, candidates, cache_key),
            worker_id=worker_id,
            limit=limit,
            limited=limited,
            index_ordered=index_ordered,
        )

    def finish(
        self,
        *,
        worker_id: str,
        succeeded: Mapping[JobT, Any] | None = None,
        failed: Mapping[JobT, BaseException] | None = None,
    ) -> int:
        """Record the outcomes of claimed jobs in one statement: ``succeeded`` maps each job
        to its (JSON) return value, ``failed`` to the exception it raised.

        A failure with attempts left goes back to ``READY`` after a backoff; otherwise it
        is ``FAILED``. A return value or error the database refuses to store fails that
        job's attempt with an ``InvalidJobError`` saying why, and the other outcomes are
        written one job at a time. Only jobs still ``RUNNING`` for ``worker_id`` at the
        attempt it claimed are written: returns how many were, so a worker knows when it
        lost one. With ``SQLQUEUE_RETENTION["SUCCESSFUL"]`` 0 a success deletes its job
        instead (one DELETE, fenced the same way), and counts as written. Raises what the
        database raised when it is out of reach or the connection was lost (a killed
        session, however often in a row), having written nothing: call it again."""
        return sum(self.finish_by_status(worker_id=worker_id, succeeded=succeeded, failed=failed).values())

    def finish_by_status(
        self,
        *,
        worker_id: str,
        succeeded: Mapping[JobT, Any] | None = None,
        failed: Mapping[JobT, BaseException] | None = None,
    ) -> Counter[str]:
        """:meth:`finish`, counting the jobs written by the status each was given
        (``READY`` for a failed attempt that will be retried, or one that raised
        ``Snooze``): what was written, not what was meant to be.

        Each job written sends its outcome's signal (``signals.job_ended``) once this
        commits: at once, outside a transaction."""
        decided = {job: failures.decide(job, error, worker_id) for job, error in (failed or {}).items()}
        ended = self.finish_as_decided(worker_id=worker_id, succeeded=succeeded or {}, failed=decided)
        return Counter(outcome.status for outcome in ended)

    def finish_as_decided(
        self,
        *,
        worker_id: str,
        succeeded: Mapping[JobT, Any],
        failed: Mapping[JobT, failures.Failure],
    ) -> list[finishing.Ended]:
        """:meth:`finish_by_status` for the runner (the worker, the testing helpers, the
        rescue), which decided each failure (or snooze) as it ran the job
        (``rules.failures.decide``): written as decided, fenced the same way. What each job
        written became; each sends its outcome's signal (``signals.job_ended``) once
        this commits."""
        jobs = self.on_queue_db()
        # The claimed rows carry their batch (ids are never 0): a batch-less job costs no query.
        batched = any(map(_BATCH_ID, itertools.chain(succeeded, failed)))
        # A success that deletes its job is settled in the DELETE's transaction, always: a
        # link left unsettled to a job no longer there reads, to the sweep, as one
        # deleted before it finished, which cancels what waits for it.
        deleting = bool(succeeded) and finishing.deletes_successes()
        if not (batched or deleting) and (
            dependencies.none_unsettled_lately(jobs.db) or not dependencies.awaited(jobs.db, [*succeeded, *failed])
        ):
            # A job nothing waits for and in no batch is finished outside a transaction, as
            # ever (db/finishing.py recovers from a refused outcome on its own connection).
            # While no workflow is under way, that is taken for granted, unread.
            ended = finishing.finish(jobs, worker_id=worker_id, succeeded=succeeded, failed=failed)
            finished.announce_ended(jobs.db, ended)
            signals.send_ended(ended, jobs.db)
            # Unless a job was enqueued after one of these while this finish waited for its
            # row lock (its enqueue held it): that one is released right after.
            dependencies.settle_finished(self.model, jobs.db, [outcome.job for outcome in ended])
            return ended
        # What waits for these is settled (db/dependencies.py), and their batches counted
        # down (db/batches.py), in the finish's transaction; what waits is looked for after
        # the UPDATE, so that a job linked while it waited for a row lock is seen.
        with transaction.atomic(using=jobs.db):
            ended = finishing.finish(jobs, worker_id=worker_id, succeeded=succeeded, failed=failed)
            finished.announce_ended(jobs.db, ended)
            # Sent first as it commits: what the settling and the count release follows from these.
            signals.send_ended(ended, jobs.db)
            if batched:
                batches.count_down(self.model, jobs.db, ended)
            if parents := dependencies.awaited(jobs.db, [outcome.job for outcome in ended]):
                gone = [outcome.job.pk for outcome in ended if outcome.transition is SUCCEED_AND_DELETE]
                dependencies.settle(self.model, jobs.db, parents, gone_succeeded=gone)
        return ended

    def wait(self, job: JobT | int, timeout: float | None = None) -> JobT:
        """The job (an instance or its id) read again once it is ``SUCCESSFUL``,
        ``FAILED`` or ``CANCELLED``: woken by the news of its finish (``NOTIFY`` on
        PostgreSQL, a datagram from a worker on this host elsewhere), polling from
        5 ms up to every 0.5 s meanwhile (``db/waiting.py``). At once if it has finished.

        Raises :class:`~django_sqlqueue.exceptions.WaitTimeout` after ``timeout`` seconds
        (None: never), and ``TransactionManagementError`` inside ``transaction.atomic()``.
        A job whose row is gone while ``SQLQUEUE_RETENTION["SUCCESSFUL"]`` is 0 succeeded
        (its success deleted it): a copy of ``job`` (a bare instance for an id), not
        saved, ``SUCCESSFUL`` with no result and no ``finished_at``, is returned; any other job gone raises
        ``DoesNotExist``. Never hold a transaction open around it."""
        pk = job if isinstance(job, int) else job.pk
        found = waiting.wait_finished(self.on_queue_db(), pk, timeout)
        if found is not None:
            return found
        if not finishing.deletes_successes():
            raise self.model.DoesNotExist(f"Job {pk} is gone: deleted before it finished, or pruned since.")
        gone = copy.copy(job) if isinstance(job, self.model) else self.model(pk=pk)
        gone.status, gone.result, gone.finished_at = JobStatus.SUCCESSFUL, None, None
        return gone

    def cancel(self, jobs: models.QuerySet[JobT] | Iterable[int]) -> CancelCount:
        """Cancel ``jobs`` (a queryset or ids): a ``READY`` one becomes ``CANCELLED`` at
        once; a ``RUNNING`` one gets a cancel request (``cancel_requested_at``, the
        database's clock), which its worker learns of within a heartbeat: the job ends
        ``CANCELLED`` when its task stops on it (``current_job().raise_if_cancelled()``)
        or when the worker stops it after ``SQLQUEUE_CANCEL_GRACE``; never retried.
        Finished jobs are left alone. Two UPDATEs in one transaction; each ``READY`` job
        cancelled sends ``job_cancelled`` once it commits (with a receiver connected,
        the jobs are read and locked first). A batch left without an unfinished job
        enqueues its callbacks in that transaction, as a finish would."""
        targets = self.on_queue_db()
        if isinstance(jobs, models.QuerySet):
            targets = targets.filter(pk__in=jobs.values_list("pk", flat=True))
        else:
            targets = targets.filter(pk__in=list(jobs))
        with transaction.atomic(using=targets.db):
            ready = targets.filter(allowed(CANCEL))
            if signals.job_ended[CANCEL.outcome].receivers:
                # Its receivers get the jobs: read (and locked) first, then cancelled by id.
                found = list(ready.select_for_update())
                ready = ready.filter(pk__in=[job.pk for job in found])
                _sender(CANCEL, targets.db)(found)
            cancelled = ready.update(**written(CANCEL, finished_at=DatabaseNow()))
            requested = targets.filter(allowed(REQUEST_CANCEL)).update(
                **written(REQUEST_CANCEL, cancel_requested_at=DatabaseNow())
            )
            # What waits for them is cancelled too (or released, with after_failure="run"),
            # and their batches are recounted (completed by the last of their jobs): last,
            # as in a finish, the batches' row locks after every job's.
            dependencies.settle_cancelled(self.model, targets.db, targets)
        return CancelCount(cancelled, requested)

    def expire(self, queues: Iterable[str] | None = None, *, max_chunks: int | None = None) -> int:
        """End the ``READY`` jobs of ``queues`` (all when None) whose ``expires_at`` has
        come: ``CANCELLED``, ``end_reason`` "expired" (what the maintenance leader does
        every few seconds). Each sends ``job_ended["expired"]`` once it commits, when a
        receiver is connected. Returns how many this call ended: two callers at once
        end and count each job once."""
        jobs = self.on_queue_db().in_queues(queues)
        if not signals.job_ended[EXPIRE.outcome].receivers:
            return expiry.expire(jobs, max_chunks=max_chunks)

        return expiry.expire(jobs, max_chunks=max_chunks, ended=_sender(EXPIRE, jobs.db))

    def release(self, *, worker_id: str, unstarted: Iterable[JobT]) -> int:
        """Put claimed jobs that never started back to ``READY``, their attempt not counted
        (a worker stopping before it got to them); one someone asked to cancel meanwhile is
        ``CANCELLED`` and sends ``job_cancelled`` once that commits. Fenced like :meth:`finish`.
        The batches of jobs in one are recounted in the same transaction (a cancelled job
        may have been a batch's last)."""
        jobs = self.on_queue_db()
        unstarted = list(unstarted)
        sent = _sender(RELEASE_CANCELLED, jobs.db) if signals.job_ended[RELEASE_CANCELLED.outcome].receivers else None
        if not any(map(_BATCH_ID, unstarted)):
            return finishing.release(jobs, worker_id=worker_id, unstarted=unstarted, cancelled=sent)
        with transaction.atomic(using=jobs.db):
            released = finishing.release(jobs, worker_id=worker_id, unstarted=unstarted, cancelled=sent)
            batches.recount(self.model, jobs.db, map(_BATCH_ID, unstarted))
        return released

    def retry(self, jobs: Iterable[JobT], *, with_dependents: bool = False) -> Retried:
        """Run ``jobs`` again, as a person's Retry does: those still ``FAILED`` or
        ``CANCELLED`` get a fresh budget of attempts and snoozes (their errors stay in
        ``errors``), no deadline, and are ready now, or ``WAITING`` again for the jobs
        they were enqueued after that have not finished. ``jobs`` have their ``pk`` and
        ``unique_key`` read, and are locked by the caller's transaction. Each job with
        a ``unique_key`` is written in a savepoint of its own: one whose key another
        active job holds now is left as it is (:attr:`~django_sqlqueue.managers.Retried.held`).

        With ``with_dependents``, the jobs the ends of those retried had cancelled come
        back to wait for them again; else they are only counted. All in one
        transaction (the caller's, when it has one)."""
        jobs = list(jobs)
        rows = self.on_queue_db()
        using = rows.db
        rows = rows.filter(functools.reduce(operator.or_, map(allowed, ADMIN_RETRIES)))
        with transaction.atomic(using=using, savepoint=False):
            unfinished = dependents.unfinished_parents(self.model, using, [job.pk for job in jobs])
            groups: dict[int, list[JobT]] = defaultdict(list)
            for job in jobs:
                groups[unfinished.get(job.pk, 0)].append(job)
            held: set[int] = set()
            for count, group in groups.items():
                keyed = [job.pk for job in group if job.unique_key is not None]
                chosen = rows.filter(pk__in=[job.pk for job in group])
                held |= unique.update_each(chosen, keyed, using, **_retried(count))
            dependents.wait_again(self.model, using, unfinished.keys() - held)
            done = Retried(held={job.pk: job.unique_key for job in jobs if job.pk in held})
            retried = [job.pk for job in jobs if job.pk not in held]
            if not retried:
                return done
            if not with_dependents:
                done.dependents = len(dependents.cancelled_dependents(self.model, using, retried, lock=False))
                return done
            restored = dependents.retry_dependents(self.model, using, retried)
        done.dependents, done.dependents_held, done.below_held = restored.back, restored.held, restored.below_held
        return done

    def run_now(self, jobs: models.QuerySet[JobT]) -> int:
        """Make those of ``jobs`` that are ``READY`` for a later time due now, on the
        database's clock (a person's Run now). Returns how many it brought forward."""
        return jobs.filter(allowed(RUN_NOW)).update(**written(RUN_NOW, run_at=DatabaseNow()))

    def edit(self, job: JobT, edit: Edit) -> JobT | None:
        """Give ``job`` (as read: its ``pk``, ``status``, ``attempts`` and ``task``) the
        arguments, queue, priority, run time and most attempts of ``edit`` (a person's
        Edit), checked as :meth:`enqueue` checks them, if it is still as read and no
        worker holds it (``WAITING``, ``READY``, ``FAILED`` or ``CANCELLED``); a key
        derived from its arguments is derived again. Returns the job as it was before
        the edit, or None when it changed since it was read (a worker claimed it, say)
        and was left alone. Raises :class:`~django_sqlqueue.exceptions.InvalidJobError`
        (nothing written) for an edit an enqueue would refuse, or when another job holds
        the unique key the new arguments make; ``UnknownTaskError`` when its task is not
        registered."""
        return editing.edit_job(self.model, queue_db(self.model, self._db), job, edit)

    def delete_jobs(self, ids: Collection[int]) -> int:
        """Delete the jobs of ``ids`` that no worker holds (a job a worker runs keeps its
        row: its outcome would have nowhere to go), with their links to the jobs they
        waited for, in one transaction (the caller's, when it has one). Returns how many
        jobs it deleted."""
        jobs = self.on_queue_db()
        with transaction.atomic(using=jobs.db, savepoint=False):
            _, deleted = jobs.filter(pk__in=ids).filter(allowed(DELETE)).delete()
            dependencies.forget(jobs.db, ids)
        return deleted.get(self.model._meta.label, 0)


def _retried(unfinished: int) -> dict[str, Any]:
    """What a Retry writes to a job that ``unfinished`` jobs it was enqueued after have
    not finished (``admin_retry_transition``): ready now for none, else waiting for them."""
    transition = admin_retry_transition(unfinished=unfinished)
    waits: dict[str, Any] = {"waiting_for": unfinished} if "waiting_for" in transition.writes else {}
    return written(
        transition,
        run_at=DatabaseNow(),
        attempts=0,
        snoozes=0,
        started_at=None,
        finished_at=None,
        worker="",
        cancel_requested_at=None,
        # A person asked for it to run: a deadline it missed no longer holds.
        expires_at=None,
        end_reason="",
        **waits,
    )


def _sender(transition: Transition, using: str) -> Callable[[list[Any]], None]:
    """What sends the signal of ``transition`` (:data:`signals.job_ended`'s of its outcome)
    for each job given, once ``using``'s transaction commits."""

    def send(jobs: list[Any]) -> None:
        signals.send_ended([finishing.Ended(job, transition) for job in jobs], using)

    return send


_BATCH_ID = operator.attrgetter("batch_id")
