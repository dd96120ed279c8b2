"""The jobs table's QuerySet (adjectives that filter) and Manager (verbs that act)."""

from __future__ import annotations

import contextlib
import datetime
import functools
import itertools
import operator
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, cast

from django.conf import settings
from django.db import models, transaction

from django_sqlqueue import signals
from django_sqlqueue.conf import conf, remembered
from django_sqlqueue.db import (
    batches,
    charsets,
    claiming,
    dependencies,
    expiry,
    finishing,
    inserting,
    instances,
    rates,
    tagging,
)
from django_sqlqueue.db.clock import DatabaseNow, DatabaseNowPlus
from django_sqlqueue.db.keys import unique
from django_sqlqueue.db.keys.concurrency import with_free_slot
from django_sqlqueue.db.lifecycle import allowed, written
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.db.table import AbstractJob, JobT
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.rules import keys
from django_sqlqueue.rules.batches import callback_spec, description_problem
from django_sqlqueue.rules.dependencies import after_failure_problem
from django_sqlqueue.rules.lifecycle import CANCEL, CLAIM, EXPIRE, RELEASE_CANCELLED, REQUEST_CANCEL, Transition
from django_sqlqueue.rules.registry import RegisteredTask, get_task
from django_sqlqueue.rules.tags import merged, tags_problem
from django_sqlqueue.rules.validation import (
    ON_CONFLICT,
    arguments_problem,
    claim_limit_problem,
    concurrency_problem,
    delay_problem,
    expiry_problem,
    job_options_problem,
    meta_problem,
    run_at_problem,
    unique_key_problem,
    unique_until_problem,
)

if TYPE_CHECKING:
    from typing import Unpack


class PlainOptions(TypedDict, total=False):
    """The options a job's row holds beside its arguments, and all that
    :meth:`JobManager.enqueue_rows` takes (the same for every row). One left out or
    ``None`` comes from the task's ``@job(...)``, then from settings."""

    queue: str | None
    priority: int | None
    #: When the job may run first (aware when ``USE_TZ`` is on); not with ``delay``.
    run_at: datetime.datetime | None
    #: Seconds (or a timedelta) from the database's now; not with ``run_at``.
    delay: datetime.timedelta | float | None
    max_attempts: int | None
    timeout: datetime.timedelta | float | None
    #: Never started from this time on (aware when ``USE_TZ`` is on): it ends ``CANCELLED``,
    #: ``end_reason`` "expired"; not with ``expires_in``.
    expires_at: datetime.datetime | None
    #: Seconds (or a timedelta) from the database's now to its ``expires_at``.
    expires_in: datetime.timedelta | float | None
    #: Free JSON shown on its admin page (default ``{}``); its task may add to it.
    meta: dict[str, Any] | None


class JobOptions(PlainOptions, total=False):
    """The options of :meth:`JobManager.enqueue` and :meth:`JobManager.build`: those of
    :class:`PlainOptions`, and a job's keys."""

    #: Never more than ``concurrency_limit`` jobs with this key run at once.
    concurrency_key: str | None
    concurrency_limit: int | None
    #: At most one ready or running job has it (default: derived by ``@job(unique=...)``).
    unique_key: str | None
    #: ``"pruned"``: the job keeps its key after it ends, until it is pruned (default ``"finished"``).
    unique_until: str | None
    #: Jobs (saved, of the same database) or ids it waits for: it runs once they have all finished.
    after: Iterable[Any] | None
    #: ``"cancel"`` (default): cancelled when one of ``after`` fails; ``"run"``: runs all the same.
    after_failure: str | None
    #: Added to the task's ``@job(tags=...)``; ``Job.objects.tagged(tag)`` finds the job by any.
    tags: Sequence[str] | None
    #: The batch (a ``JobBatch`` or its id) it joins; inside ``with Job.objects.batch()``, the open one.
    batch: Any | None


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


class JobManager(models.Manager[JobT]):
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

    def build(
        self,
        task: Callable[..., Any] | str,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        queue: str | None = None,
        priority: int | None = None,
        run_at: datetime.datetime | None = None,
        delay: datetime.timedelta | float | None = None,
        max_attempts: int | None = None,
        timeout: datetime.timedelta | float | None = None,
        expires_at: datetime.datetime | None = None,
        expires_in: datetime.timedelta | float | None = None,
        meta: dict[str, Any] | None = None,
        concurrency_key: str | None = None,
        concurrency_limit: int | None = None,
        unique_key: str | None = None,
        unique_until: str | None = None,
        after: Iterable[Any] | None = None,
        after_failure: str | None = None,
        tags: Sequence[str] | None = None,
        batch: Any | None = None,
    ) -> JobT:
        """An unsaved job for ``task`` with its defaults filled in, for :meth:`enqueue_many`.

        Options left ``None`` come from the task's ``@job(...)``, then from settings.
        With ``after`` (jobs or ids), the job waits (``WAITING``) until those have all
        finished; see the Workflows guide for ``after_failure``. With ``batch`` (a
        ``JobBatch`` or its id), or inside ``with Job.objects.batch()``, it joins that
        batch (see the Batches guide)."""
        registered = get_task(task)
        job = self._unkeyed(
            registered,
            list(args) if isinstance(args, (list, tuple)) else args,
            {} if kwargs is None else dict(kwargs) if isinstance(kwargs, Mapping) else kwargs,
            queue=queue,
            priority=priority,
            run_at=run_at,
            delay=delay,
            max_attempts=max_attempts,
            timeout=timeout,
            expires_at=expires_at,
            expires_in=expires_in,
            meta=meta,
        )
        job.concurrency_key, job.concurrency_limit = keys.concurrency_slot(
            registered, job.args, job.kwargs, key=concurrency_key, limit=concurrency_limit
        )
        if unique_key is None and isinstance(job.kwargs, dict):  # other kwargs are refused later
            unique_key = keys.unique_key(registered, job.args, job.kwargs, job.queue)
        job.unique_key = unique_key
        until = _first(unique_until, registered.unique_until, "finished")
        if problem := unique_until_problem(until):
            raise InvalidJobError(f"{problem}.")
        if until == "pruned" and unique_key is None:
            raise InvalidJobError('unique_until="pruned" needs a unique_key (or @job(unique=...)).')
        job.unique_until_pruned = until == "pruned"
        if after is not None:
            job.after = tuple(after)
        if problem := after_failure_problem("cancel" if after_failure is None else after_failure):
            raise InvalidJobError(f"{problem}.")
        job.runs_after_failure = after_failure == "run"
        if tags is not None and (problem := tags_problem(tags)):
            raise InvalidJobError(f"Cannot enqueue {registered.name}: {problem}.")
        job.new_tags = merged(registered.tags, tags)
        job.batch_id = batches.batch_id(batch)
        return job

    def _unkeyed(self, registered: RegisteredTask, args: Any, kwargs: Any, **options: Unpack[PlainOptions]) -> JobT:
        """An unsaved job of ``registered`` with its options filled in as :meth:`build`
        says, and no concurrency or unique key yet."""
        run_at, delay = options.get("run_at"), options.get("delay")
        if run_at is not None and delay is not None:
            raise InvalidJobError("Pass run_at or delay, not both.")
        defaults = _TaskDefaults.of(registered)
        job = instances.unsaved(self.model, task=registered.name, args=args, kwargs=kwargs, **defaults.under(options))
        if run_at is not None:
            job.run_at = _checked_run_at(run_at)
        elif delay is not None:
            job.run_at = DatabaseNowPlus(_checked_delay(delay))
        expires_at, expires_in = options.get("expires_at"), options.get("expires_in")
        if expires_at is None and expires_in is None:
            expires_in = registered.expires_in
        if (expires_at is not None or expires_in is not None) and (
            problem := expiry_problem(
                expires_at=expires_at, expires_in=expires_in, run_at=run_at, delay=delay, use_tz=settings.USE_TZ
            )
        ):
            raise InvalidJobError(f"Cannot enqueue {registered.name}: {problem}.")
        if expires_in is not None:
            job.expires_at = DatabaseNowPlus(_checked_delay(expires_in))
        else:
            job.expires_at = expires_at
        meta = options.get("meta")
        job.meta = {} if meta is None else meta
        return job

    def enqueue(
        self,
        task: Callable[..., Any] | str,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        on_conflict: str = "skip",
        **options: Unpack[JobOptions],
    ) -> JobT:
        """Write one job on the caller's connection and inside the caller's transaction,
        so it is rolled back with it and workers see it only once it commits.

        When an active job already holds its ``unique_key``, nothing is written and
        that job is returned, with ``created`` False (``on_conflict="skip"``); with
        ``"replace"`` it gets this job's arguments and run time first if it is still
        ``READY``; ``"raise"`` raises :class:`~django_sqlqueue.exceptions.UniqueJobExists`.

        Raises :class:`~django_sqlqueue.exceptions.UnknownTaskError` or
        :class:`~django_sqlqueue.exceptions.InvalidJobError` and writes nothing
        when the job cannot be run as given. Options are those of :meth:`build`. The
        job goes through ``SQLQUEUE_ENQUEUE_HOOKS`` before it is checked, and sends
        ``job_enqueued`` once written and committed."""
        job = self.build(task, args, kwargs, **options)
        _hooked([job])
        _validate(job)
        return self._write([job], batch_size=1, on_conflict=on_conflict)[0]

    def enqueue_many(self, jobs: Iterable[JobT], *, batch_size: int = 1000, on_conflict: str = "skip") -> list[JobT]:
        """Write many jobs (usually made by :meth:`build`) in a few multi-row INSERTs, all
        or none: every job is validated before anything is written (one bad job refuses
        them all), and the INSERTs share one transaction (the caller's, if it has one).
        Each goes through ``SQLQUEUE_ENQUEUE_HOOKS`` first, as in :meth:`enqueue`.
        On PostgreSQL, jobs without a ``unique_key`` go by one ``COPY`` instead, with
        ids taken from the table's sequence first; on MySQL/MariaDB no INSERT is
        larger than the server's ``max_allowed_packet``.

        Returns a job for each, in order: the one written (``created`` True), or the
        active job that holds its ``unique_key``, as :meth:`enqueue` says; with
        ``on_conflict="raise"`` a conflict writes none of them (a savepoint).

        Raises :class:`~django_sqlqueue.exceptions.UnknownTaskError` or
        :class:`~django_sqlqueue.exceptions.InvalidJobError` and writes nothing
        when any job cannot be run as given."""
        jobs = list(jobs)
        _hooked(jobs)
        seen: dict[tuple[Any, ...], RegisteredTask] = {}
        for job in jobs:
            _validate(job, seen=seen)
        return self._write(jobs, batch_size=batch_size, on_conflict=on_conflict) if jobs else []

    def enqueue_rows(
        self,
        rows: Iterable[tuple[Callable[..., Any] | str, Sequence[Any], Mapping[str, Any] | None]],
        *,
        batch_size: int = 1000,
        **options: Unpack[PlainOptions],
    ) -> int:
        """Write plain jobs, one for each ``(task, args, kwargs)`` of ``rows``, without a
        ``Job`` object each: for hundreds of thousands of jobs at once. Returns how many.

        ``options`` apply to every row, over each task's own ``@job(...)`` options and
        settings, as in :meth:`build`. All or none: the rows are read, checked and
        written as they come, in one transaction (a savepoint inside the caller's), so a
        bad row anywhere raises :class:`~django_sqlqueue.exceptions.UnknownTaskError` or
        :class:`~django_sqlqueue.exceptions.InvalidJobError` and
        leaves no job written. Nothing is read back: no ids, no ``Job`` objects. A task
        with ``@job(unique=...)`` is refused (use :meth:`enqueue_many`, which says which
        jobs a conflict kept out); concurrency keys are derived for each row as usual.
        On PostgreSQL the rows go by ``COPY``."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, not {batch_size!r}.")
        if batches.OPEN.get() is not None:
            raise InvalidJobError("enqueue_rows writes no batch: inside Job.objects.batch(), use enqueue_many.")
        using = queue_db(self.model, self._db)
        templates: dict[Any, tuple[JobT, RegisteredTask]] = {}
        first_template: Any = None

        def plain(number: int, row: Any) -> tuple[Any, ...]:
            nonlocal first_template
            try:
                task, args, kwargs = row
            except (TypeError, ValueError):
                raise InvalidJobError(f"Row {number} is not (task, args, kwargs): {row!r:.200}.") from None
            try:
                made = templates.get(task)
            except TypeError:  # unhashable: no task, as get_task says
                made = self._plain_template(task, options)
            if made is None:
                made = templates[task] = self._plain_template(task, options)
                first_template = first_template or made[0]
                self._storable(using, made[1].name, {"queue": made[0].queue, "task": made[0].task})
            template, registered = made
            args = list(args) if isinstance(args, (list, tuple)) else args
            kwargs = {} if kwargs is None else dict(kwargs) if isinstance(kwargs, Mapping) else kwargs
            if problem := arguments_problem(args, kwargs) or registered.binding_problem(args, kwargs):
                raise InvalidJobError(f"Cannot enqueue {registered.name} (row {number}): {problem}.")
            key, limit = keys.concurrency_slot(registered, args, kwargs, key=None, limit=None)
            if key is not None and not key.isascii():
                self._storable(using, f"{registered.name} (row {number})", {"concurrency_key": key})
            return inserting.plain_row(template, args, kwargs, key, limit)

        values = itertools.starmap(plain, enumerate(rows))
        with transaction.atomic(using=using):
            # The first row resolves its task's options, its times among them, before the write begins.
            first = list(itertools.islice(values, 1))
            if not first:
                return 0
            return inserting.insert_plain(self.model, itertools.chain(first, values), using, first_template, batch_size)

    def _plain_template(self, task: Callable[..., Any] | str, options: PlainOptions) -> tuple[JobT, RegisteredTask]:
        """A job of ``task`` with ``options`` and no arguments, checked as :meth:`enqueue`
        checks one, whose options every plain row of that task takes."""
        registered = get_task(task)
        if registered.unique is not None:
            raise InvalidJobError(
                f"{registered.name} has @job(unique=...): enqueue_rows cannot say which jobs a conflict "
                "kept out; enqueue them with enqueue_many."
            )
        if registered.tags:
            raise InvalidJobError(
                f"{registered.name} has @job(tags=...): enqueue_rows writes no tags; enqueue them with enqueue_many."
            )
        template = self._unkeyed(registered, [], {}, **options)
        _validate(template, bind=False)  # each row's arguments are bound as it comes
        return template, registered

    def _storable(self, using: str, task: str, texts: Mapping[str, str | None]) -> None:
        """Refuse text ``using``'s database would not store as itself (a character
        outside a MySQL table's or connection's character set), before anything is written."""
        if problem := charsets.unstorable(self.model, using, texts):
            raise InvalidJobError(f"Cannot enqueue {task}: {problem}.")

    def _write(self, jobs: list[JobT], *, batch_size: int, on_conflict: str) -> list[JobT]:
        batch_ids = {job.batch_id for job in jobs if job.batch_id is not None}
        if not batch_ids:
            return self._write_linked(jobs, batch_size=batch_size, on_conflict=on_conflict)
        # Jobs of batches: written, then their batches locked (refusing a finished one,
        # which rolls the jobs back) and counted in, in one transaction (db/batches.py).
        # Job rows before the batch's, as a finish locks them: never a deadlock, and a
        # batch that a finish completed meanwhile did not see these jobs, so refuses them.
        using = queue_db(self.model, self._db)
        with transaction.atomic(using=using):
            written_jobs = self._write_linked(jobs, batch_size=batch_size, on_conflict=on_conflict)
            batches.lock_open(using, batch_ids)
            batches.join(using, Counter(job.batch_id for job in written_jobs if job.created and job.batch_id))
        return written_jobs

    def _write_linked(self, jobs: list[JobT], *, batch_size: int, on_conflict: str) -> list[JobT]:
        if not any(job.after for job in jobs):
            return self._write_rows(jobs, batch_size=batch_size, on_conflict=on_conflict)
        # Jobs enqueued after= others: their parents locked, the rows and their links
        # written, in one transaction (db/dependencies.py).
        using = queue_db(self.model, self._db)
        for job in jobs:
            job.after = dependencies.parent_ids(job.after, using)
        with transaction.atomic(using=using):
            statuses = dependencies.lock_parents(self.model, using, {pk for job in jobs for pk in job.after})
            written_jobs = self._write_rows(jobs, batch_size=batch_size, on_conflict=on_conflict)
            children = [job for job in written_jobs if job.created and job.after]
            dependencies.link(self.model, using, children, statuses)
        return written_jobs

    def _write_rows(self, jobs: list[JobT], *, batch_size: int, on_conflict: str) -> list[JobT]:
        if on_conflict not in ON_CONFLICT:
            raise ValueError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, not {on_conflict!r}.")
        using = queue_db(self.model, self._db)
        for job in jobs:
            # Names are ASCII as a rule, which every character set holds: then no call at all.
            if not (job.queue + job.task + (job.concurrency_key or "") + (job.unique_key or "")).isascii():
                texts = {"queue": job.queue, "task": job.task, "concurrency_key": job.concurrency_key}
                self._storable(using, job.task, {**texts, "unique_key": job.unique_key})
        if any(job.new_tags for job in jobs):
            # The tags' rows with their jobs, or neither.
            with transaction.atomic(using=using, savepoint=False):
                written = self._insert(jobs, using, batch_size, on_conflict)
                tagging.write_tags(written, using)
            return written
        return self._insert(jobs, using, batch_size, on_conflict)

    def _insert(self, jobs: list[JobT], using: str, batch_size: int, on_conflict: str) -> list[JobT]:
        if any(job.unique_key is not None for job in jobs):
            jobs = unique.write(jobs, using, batch_size, on_conflict)
            signals.send_enqueued([job for job in jobs if job.created], using)
            return jobs
        if len(jobs) == 1:
            inserting.insert(jobs, using, batch_size=1)
        else:
            # Inside the caller's transaction this is part of it, without a savepoint.
            with transaction.atomic(using=using, savepoint=False):
                inserting.insert(jobs, using, batch_size=batch_size)
        for job in jobs:
            job.created = True
        signals.send_enqueued(jobs, using)
        return jobs

    @contextlib.contextmanager
    def batch(
        self,
        *,
        on_success: Any = None,
        on_failure: Any = None,
        on_finish: Any = None,
        description: str = "",
    ) -> Iterator[Any]:
        """Enqueue jobs together: every job built or enqueued inside the ``with`` block
        joins the batch it yields (a ``JobBatch``, typed ``Any``: the models module
        imports this one), and once they have all finished
        (and those added later with ``batch=``), each callback that applies is enqueued
        once with ``batch=`` its id, description and counts: ``on_finish`` always,
        ``on_success`` when none failed, ``on_failure`` when any failed for good (was
        cancelled or expired, or was deleted first). A callback is a registered task,
        ``(task, args)`` or ``(task, args, kwargs)``.

        The block is one transaction: an exception in it writes neither the batch nor
        its jobs, and workers see them when it commits. A batch with no job finishes
        as the block ends. Raises :class:`~django_sqlqueue.exceptions.InvalidJobError`,
        writing nothing, for a callback that is not a registered task or whose
        arguments could not be stored or bound."""
        callbacks: dict[str, dict[str, Any]] = {}
        for when, value in (("on_success", on_success), ("on_failure", on_failure), ("on_finish", on_finish)):
            if value is not None:
                try:
                    callbacks[when] = callback_spec(when, value)
                except ValueError as error:  # some of its messages end with a full stop, some not
                    raise InvalidJobError(f"{str(error).rstrip('.')}.") from None
        if problem := description_problem(description):
            raise InvalidJobError(f"{problem}.")
        using = queue_db(self.model, self._db)
        with transaction.atomic(using=using):
            made = batches.open_batch(using, description, callbacks)
            token = batches.OPEN.set(made.pk)
            try:
                yield made
            finally:
                batches.OPEN.reset(token)
            if batches.complete(self.model, using, made.pk):  # no job in it: it finishes now
                made.refresh_from_db()

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
        shape: Hashable | None = None
        if filter is None:
            shape = ("all but", skip_queues) if queues is None else ("in", tuple(queues))
        # An index holds the ready jobs of all queues, or of one, in claim order.
        index_ordered = filter is None and (queues is None or len(set(queues)) == 1)
        return claiming.claim(
            claiming.Candidates(self.model, jobs.db, candidates, shape),
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
        database raised when it is out of reach."""
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
        decided = {job: finishing.decide(job, error, worker_id) for job, error in (failed or {}).items()}
        ended = self._finish_decided(worker_id=worker_id, succeeded=succeeded or {}, failed=decided)
        return Counter(outcome.status for outcome in ended)

    def _finish_decided(
        self,
        *,
        worker_id: str,
        succeeded: Mapping[JobT, Any],
        failed: Mapping[JobT, finishing.Failure],
    ) -> list[finishing.Ended]:
        """:meth:`finish_by_status` for the runner (the worker, the testing helpers, the
        rescue), which decided each failure (or snooze) as it ran the job: written as
        decided. What each job written became; each sends its outcome's signal
        (``signals.job_ended``) once this commits."""
        jobs = self.on_queue_db()
        gone = [job.pk for job in succeeded]
        # The claimed rows carry their batch (ids are never 0): a batch-less job costs no query.
        batched = any(map(_BATCH_ID, itertools.chain(succeeded, failed)))
        if not batched and not dependencies.awaited(jobs.db, [*succeeded, *failed]):
            # A job nothing waits for and in no batch is finished outside a transaction, as
            # ever (db/finishing.py recovers from a refused outcome on its own connection).
            ended = finishing.finish(jobs, worker_id=worker_id, succeeded=succeeded, failed=failed)
            signals.send_ended(ended, jobs.db)
            # Unless a job was enqueued after one of these while this finish waited for its
            # row lock (its enqueue held it): that one is released right after.
            dependencies.settle_finished(self.model, jobs.db, [outcome.job for outcome in ended], gone_succeeded=gone)
            return ended
        # What waits for these is settled (db/dependencies.py), and their batches counted
        # down (db/batches.py), in the finish's transaction; what waits is looked for after
        # the UPDATE, so that a job linked while it waited for a row lock is seen.
        with transaction.atomic(using=jobs.db):
            ended = finishing.finish(jobs, worker_id=worker_id, succeeded=succeeded, failed=failed)
            # Sent first as it commits: what the settling and the count release follows from these.
            signals.send_ended(ended, jobs.db)
            if batched:
                batches.count_down(self.model, jobs.db, ended)
            if parents := dependencies.awaited(jobs.db, [outcome.job for outcome in ended]):
                dependencies.settle(self.model, jobs.db, parents, gone_succeeded=gone)
        return ended

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


def _sender(transition: Transition, using: str) -> Callable[[list[Any]], None]:
    """What sends the signal of ``transition`` (:data:`signals.job_ended`'s of its outcome)
    for each job given, once ``using``'s transaction commits."""

    def send(jobs: list[Any]) -> None:
        signals.send_ended([finishing.Ended(job, transition) for job in jobs], using)

    return send


_BATCH_ID = operator.attrgetter("batch_id")


class _TaskDefaults(NamedTuple):
    """The options a job of ``task`` gets when its enqueue names none: the task's own
    ``@job(...)`` options, else the settings'. Worked out once per settings in force
    (:func:`remembered`), not for every job built."""

    task: RegisteredTask
    queue: str
    priority: int
    max_attempts: int
    timeout: float | None

    @classmethod
    def of(cls, task: RegisteredTask) -> _TaskDefaults:
        defaults = remembered(("task defaults", task.name), lambda: cls.made(task))
        # A task registered again (a module reload) has other options under its name.
        return defaults if defaults.task is task else cls.made(task)

    @classmethod
    def made(cls, task: RegisteredTask) -> _TaskDefaults:
        return cls(
            task,
            queue=_first(task.queue, conf.SQLQUEUE_DEFAULT_QUEUE),
            priority=_first(task.priority, 0),
            max_attempts=_first(task.max_attempts, conf.SQLQUEUE_MAX_ATTEMPTS),
            timeout=_seconds(_first(task.timeout, conf.SQLQUEUE_TIMEOUT)),
        )

    def under(self, options: PlainOptions) -> dict[str, Any]:
        """The job's options: those ``options`` gives (not None), else these."""
        queue, priority = options.get("queue"), options.get("priority")
        max_attempts, timeout = options.get("max_attempts"), options.get("timeout")
        return {
            "queue": self.queue if queue is None else queue,
            "priority": self.priority if priority is None else priority,
            "max_attempts": self.max_attempts if max_attempts is None else max_attempts,
            "timeout": self.timeout if timeout is None else _seconds(timeout),
        }


def _first(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def _seconds(value: Any) -> Any:
    return value.total_seconds() if isinstance(value, datetime.timedelta) else value


def _checked_run_at(run_at: Any) -> datetime.datetime:
    if problem := run_at_problem(run_at, use_tz=settings.USE_TZ):
        raise InvalidJobError(f"{problem}.")
    return cast("datetime.datetime", run_at)


def _checked_delay(delay: Any) -> datetime.timedelta:
    if problem := delay_problem(delay):
        raise InvalidJobError(f"{problem}.")
    return delay if isinstance(delay, datetime.timedelta) else datetime.timedelta(seconds=delay)


def _expires_at_problem(expires_at: Any) -> str | None:
    """An ``expires_at`` set on a built job since: None, an expression (the database's
    now plus an ``expires_in`` build() checked) or a time."""
    if expires_at is None or hasattr(expires_at, "resolve_expression"):
        return None
    return run_at_problem(expires_at, use_tz=settings.USE_TZ, name="expires_at")


def _hooked(jobs: Iterable[AbstractJob]) -> None:
    """Pass each of ``jobs`` to the ``SQLQUEUE_ENQUEUE_HOOKS``, in order, before they
    are checked: what a hook sets is checked as the caller's own. The setting's
    callables are looked up once per settings in force, not on every enqueue."""
    if hooks := remembered(("enqueue hooks", ""), lambda: conf.SQLQUEUE_ENQUEUE_HOOKS):
        for job in jobs:
            for hook in hooks:
                hook(job)


def _validate(
    job: AbstractJob, *, bind: bool = True, seen: dict[tuple[Any, ...], RegisteredTask] | None = None
) -> None:
    """Everything :meth:`JobManager.build` checks, checked again on the job as it is
    now: ``enqueue_many`` takes jobs a caller may have changed since. With ``bind`` (not
    for a template without arguments), the arguments must fit the task's function too.
    ``seen`` maps the task and options (with their types) of jobs checked before, which
    most jobs of one ``enqueue_many`` share, to their registered task: looked up and
    checked once, not for every job."""
    shared = _SHARED(job)
    # With their types: True is 1 to a dict, and a good priority, but not to the check.
    key = (*shared, *map(type, shared))
    try:
        registered = None if seen is None else seen.get(key)
    except TypeError:  # an option that is no hashable value: the checks below say what is wrong
        registered, seen = None, None
    known = registered is not None
    if registered is None:
        registered = get_task(job.task)
    missing = [] if known else [name for name in ("queue", "priority", "max_attempts") if getattr(job, name) is None]
    if missing:
        problem: str | None = f"{', '.join(missing)} not set: make jobs with Job.objects.build()"
    else:
        problem = (
            arguments_problem(job.args, job.kwargs)
            or (registered.binding_problem(job.args, job.kwargs) if bind else None)
            or (None if known else _options_problem(job))
            # No meta and no tags, as most jobs have, without a call each.
            or (None if job.meta == {} else meta_problem(job.meta))
            or (None if job.new_tags == () else tags_problem(job.new_tags))
            or _expires_at_problem(job.expires_at)
            # An expression is the database's now, or now plus a delay build() checked.
            or (
                None
                if hasattr(job.run_at, "resolve_expression")
                else run_at_problem(job.run_at, use_tz=settings.USE_TZ)
            )
        )
    if problem:
        raise InvalidJobError(f"Cannot enqueue {job.task}: {problem}.")
    if seen is not None and not known:
        seen[key] = registered


#: A job's task and the options :func:`_validate` checks once for all the jobs that share them.
_SHARED = operator.attrgetter(
    "task", "queue", "priority", "max_attempts", "timeout", "concurrency_key", "concurrency_limit", "unique_key"
)


def _options_problem(job: AbstractJob) -> str | None:
    return (
        job_options_problem(queue=job.queue, priority=job.priority, max_attempts=job.max_attempts, timeout=job.timeout)
        or concurrency_problem(job.concurrency_key, job.concurrency_limit)
        or unique_key_problem(job.unique_key)
    )
