"""The jobs' manager's verbs that put jobs in the table: ``build``, ``enqueue``,
``enqueue_many``, ``enqueue_rows`` and ``batch``, and how the jobs they made are written
(in their batch, linked to the jobs they wait for, with their tags, unique or not).

A base of :class:`~django_sqlqueue.managers.JobManager`, which adds the verbs on jobs
once they are in (claim, finish, cancel, expire, release): one manager, ``Job.objects``,
in two modules, each with one side of a job's life."""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, models, transaction

from django_sqlqueue import signals
from django_sqlqueue.db import batches, charsets, dependencies, inserting, tagging
from django_sqlqueue.db.building import (
    JobOptions,
    PlainOptions,
    check_arguments,
    copy_of_template,
    first,
    hooked,
    unkeyed,
    validate,
)
from django_sqlqueue.db.engines.errors import migrations_needed, tables_missing
from django_sqlqueue.db.keys import unique
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.db.schema.table import JobT
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.managers import collector
from django_sqlqueue.rules import keys
from django_sqlqueue.rules.batches import callback_spec, description_problem
from django_sqlqueue.rules.dependencies import after_failure_problem
from django_sqlqueue.rules.registry import RegisteredTask, atomic_aliases, atomic_elsewhere, get_task
from django_sqlqueue.rules.tags import merged, tags_problem
from django_sqlqueue.rules.validation import ON_CONFLICT, arguments_problem, unique_until_problem

if TYPE_CHECKING:
    from typing import Unpack


#: The options :func:`~django_sqlqueue.db.building.copy_of_template`'s templates hold.
_TEMPLATED = frozenset({"queue", "priority", "max_attempts", "timeout"})
#: Those options of a job built with none.
_NO_OPTIONS = (None, None, None, None)
#: Every option :meth:`EnqueueingManager.build` takes.
_OPTIONS = frozenset(JobOptions.__annotations__)


def _templated(options: JobOptions) -> bool:
    """Whether every option of ``options`` a template does not hold is one
    :meth:`EnqueueingManager.build` takes, given as None."""
    for name, value in options.items():
        if value is not None and name not in _TEMPLATED:
            return False
    return options.keys() <= _OPTIONS


def _built(model: type[JobT], registered: RegisteredTask, args: Any, kwargs: Any, options: JobOptions) -> JobT:
    """The job :meth:`EnqueueingManager.build` makes the long way: every option of
    ``options`` worked out, checked and derived (its keys, its batch)."""
    if not options.keys() <= _OPTIONS:
        raise TypeError(f"build() got an unexpected keyword argument {min(options.keys() - _OPTIONS)!r}")
    job = unkeyed(model, registered, args, kwargs, options)
    job.concurrency_key, job.concurrency_limit = keys.concurrency_slot(
        registered, job.args, job.kwargs, key=options.get("concurrency_key"), limit=options.get("concurrency_limit")
    )
    unique_key = options.get("unique_key")
    if unique_key is None and isinstance(job.kwargs, dict):  # other kwargs are refused later
        unique_key = keys.unique_key(registered, job.args, job.kwargs, job.queue)
    job.unique_key = unique_key
    until = first(options.get("unique_until"), registered.unique_until, "finished")
    if problem := unique_until_problem(until):
        raise InvalidJobError(f"{problem}.")
    if until == "pruned" and unique_key is None:
        raise InvalidJobError('unique_until="pruned" needs a unique_key (or @job(unique=...)).')
    job.unique_until_pruned = until == "pruned"
    if (after := options.get("after")) is not None:
        job.after = tuple(after)
    after_failure = options.get("after_failure")
    if problem := after_failure_problem("cancel" if after_failure is None else after_failure):
        raise InvalidJobError(f"{problem}.")
    job.runs_after_failure = after_failure == "run"
    tags = options.get("tags")
    if tags is not None and (problem := tags_problem(tags)):
        raise InvalidJobError(f"Cannot enqueue {registered.name}: {problem}.")
    job.new_tags = merged(registered.tags, tags)
    job.batch_id = batches.batch_id(options.get("batch"))
    return job


def _refuse_atomic_elsewhere(tasks: Iterable[str], using: str) -> None:
    """Raise ``InvalidJobError`` for a task of ``tasks`` that said (``@job(atomic="alias")``)
    it writes to another database than ``using``, where its jobs would be written."""
    for task in tasks:
        if problem := atomic_elsewhere(task, using):
            raise InvalidJobError(f"Cannot enqueue {task}: {problem}.")


class EnqueueingManager(models.Manager[JobT]):
    """Build and enqueue jobs (:class:`~django_sqlqueue.managers.JobManager` is this, and
    the verbs that claim and end them)."""

    def build(
        self,
        task: Callable[..., Any] | str,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        **options: Unpack[JobOptions],
    ) -> JobT:
        """An unsaved job for ``task`` with its defaults filled in, for :meth:`enqueue_many`.

        ``options`` are those of :class:`~django_sqlqueue.managers.JobOptions`: one left
        out or ``None`` comes from the task's ``@job(...)``, then from settings.
        With ``after`` (jobs or ids), the job waits (``WAITING``) until those have all
        finished; see the Workflows guide for ``after_failure``. With ``batch`` (a
        ``JobBatch`` or its id), or inside ``with Job.objects.batch()``, it joins that
        batch (see the Batches guide)."""
        return self._build(task, args, kwargs, options)[0]

    def _build(
        self, task: Callable[..., Any] | str, args: Any, kwargs: Any, options: JobOptions
    ) -> tuple[JobT, RegisteredTask | None]:
        """:meth:`build`'s job, and its task when the job is a copy of a template whose
        every check but its arguments' holds for it (see
        :attr:`~django_sqlqueue.db.building.JobTemplate.arguments_checked`); None when
        it must be checked whole."""
        registered = get_task(task)
        args = list(args) if isinstance(args, (list, tuple)) else args
        kwargs = {} if kwargs is None else dict(kwargs) if isinstance(kwargs, Mapping) else kwargs
        # No option (not None) but those a template may hold (see copy_of_template), as for most jobs built.
        common: tuple[Any, ...] | None = None
        if not options:
            common = _NO_OPTIONS
        elif options.keys() <= _TEMPLATED or _templated(options):
            common = (
                options.get("queue"),
                options.get("priority"),
                options.get("max_attempts"),
                options.get("timeout"),
            )
        if common is not None:
            copied = copy_of_template(self.model, registered, args, kwargs, common, self.build)
            if copied is not None:
                job, template = copied
                return job, registered if template.arguments_checked else None
        return _built(self.model, registered, args, kwargs, options), None

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
        job, arguments_only = self._build(task, args, kwargs, options)
        if arguments_only is not None:
            check_arguments(job, arguments_only)
        else:
            hooked([job])
            validate(job)
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

        Python's cyclic garbage collector is paused for the call (for every thread of
        the process, as the collector is one; jobs a generator builds for it included):
        each collection would walk every job made so far and free none.

        Raises :class:`~django_sqlqueue.exceptions.UnknownTaskError` or
        :class:`~django_sqlqueue.exceptions.InvalidJobError` and writes nothing
        when any job cannot be run as given."""
        # Jobs built by a generator are built here, so under the pause too.
        with collector.paused():
            jobs = list(jobs)
            hooked(jobs)
            seen: dict[tuple[Any, ...], RegisteredTask] = {}
            for job in jobs:
                validate(job, seen=seen)
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
                made = self._row_template(task, options)
            if made is None:
                made = templates[task] = self._row_template(task, options)
                first_template = first_template or made[0]
                if made[1].name in atomic_aliases:
                    _refuse_atomic_elsewhere([made[1].name], using)
                self._storable(using, made[1].name, {"queue": made[0].queue, "task": made[0].task})
            template, registered = made
            args = list(args) if isinstance(args, (list, tuple)) else args
            kwargs = {} if kwargs is None else dict(kwargs) if isinstance(kwargs, Mapping) else kwargs
            if problem := arguments_problem(args, kwargs) or registered.binding_problem(args, kwargs):
                raise InvalidJobError(f"Cannot enqueue {registered.name} (row {number}): {problem}.")
            key, limit = keys.concurrency_slot(registered, args, kwargs, key=None, limit=None)
            if key is not None and not key.isascii():
                self._storable(using, f"{registered.name} (row {number})", {"concurrency_key": key})
            return inserting.row_values(template, args, kwargs, key, limit)

        values = itertools.starmap(plain, enumerate(rows))
        with migrations_needed(using), transaction.atomic(using=using):
            # The first row resolves its task's options, its times among them, before the write begins.
            first = list(itertools.islice(values, 1))
            if not first:
                return 0
            return inserting.insert_rows(self.model, itertools.chain(first, values), using, first_template, batch_size)

    def _row_template(self, task: Callable[..., Any] | str, options: PlainOptions) -> tuple[JobT, RegisteredTask]:
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
        template = unkeyed(self.model, registered, [], {}, options)
        validate(template, bind=False)  # each row's arguments are bound as it comes
        return template, registered

    def _storable(self, using: str, task: str, texts: Mapping[str, str | None]) -> None:
        """Refuse text ``using``'s database would not store as itself (a character
        outside a MySQL table's or connection's character set), before anything is written."""
        if problem := charsets.unstorable(self.model, using, texts):
            raise InvalidJobError(f"Cannot enqueue {task}: {problem}.")

    def _write(self, jobs: list[JobT], *, batch_size: int, on_conflict: str) -> list[JobT]:
        """Write ``jobs`` (checked) on the queue's database, each step below taken only
        by jobs that need it: their batches, their parents, their tags."""
        if on_conflict not in ON_CONFLICT:
            raise ValueError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, not {on_conflict!r}.")
        using = queue_db(self.model, self._db)
        if atomic_aliases and not atomic_aliases.keys().isdisjoint(map(attrgetter("task"), jobs)):
            _refuse_atomic_elsewhere([job.task for job in jobs], using)
        try:
            if any(job.batch_id is not None for job in jobs):
                return self._write_batched(jobs, using, batch_size, on_conflict)
            if any(job.after for job in jobs):
                return self._write_linked(jobs, using, batch_size, on_conflict)
            return self._write_rows(jobs, using, batch_size, on_conflict)
        except DatabaseError as error:  # as migrations_needed says, without a call on every enqueue
            if (missing := tables_missing(error, using)) is not None:
                raise missing from error
            raise

    def _write_batched(self, jobs: list[JobT], using: str, batch_size: int, on_conflict: str) -> list[JobT]:
        batch_ids = {job.batch_id for job in jobs if job.batch_id is not None}
        # Jobs of batches: written, then their batches locked (refusing a finished one,
        # which rolls the jobs back) and counted in, in one transaction (db/batches.py).
        # Job rows before the batch's, as a finish locks them: never a deadlock, and a
        # batch that a finish completed meanwhile did not see these jobs, so refuses them.
        with transaction.atomic(using=using):
            if any(job.after for job in jobs):
                written_jobs = self._write_linked(jobs, using, batch_size, on_conflict)
            else:
                written_jobs = self._write_rows(jobs, using, batch_size, on_conflict)
            batches.lock_open(using, batch_ids)
            batches.join(using, Counter(job.batch_id for job in written_jobs if job.created and job.batch_id))
        return written_jobs

    def _write_linked(self, jobs: list[JobT], using: str, batch_size: int, on_conflict: str) -> list[JobT]:
        # Jobs enqueued after= others: their parents locked, the rows and their links
        # written, in one transaction (db/dependencies.py).
        for job in jobs:
            job.after = dependencies.parent_ids(job.after, using)
        with transaction.atomic(using=using):
            statuses = dependencies.lock_parents(self.model, using, {pk for job in jobs for pk in job.after})
            written_jobs = self._write_rows(jobs, using, batch_size, on_conflict)
            children = [job for job in written_jobs if job.created and job.after]
            dependencies.link(self.model, using, children, statuses)
        return written_jobs

    def _write_rows(self, jobs: list[JobT], using: str, batch_size: int, on_conflict: str) -> list[JobT]:
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
