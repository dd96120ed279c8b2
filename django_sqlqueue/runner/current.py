"""The job a task runs as: ``current_job()`` inside a task, None elsewhere.

A context variable set around each attempt (``runner/execution.py``), so it is right
in every worker thread, in ``testing.perform`` and ``run_jobs``, and in a Django task.
Imports no model: the package's top imports it."""

from __future__ import annotations

import datetime
import logging
import math
import time
from collections.abc import Mapping
from contextvars import ContextVar, Token
from functools import cached_property
from typing import TYPE_CHECKING, Any, NoReturn

from django.db import DatabaseError, connections, transaction
from django.db.transaction import TransactionManagementError

from django_sqlqueue.exceptions import InvalidJobError, JobCancelled, JobTakenAway, Snooze
from django_sqlqueue.rules.failures import Failure, decide
from django_sqlqueue.rules.lifecycle import SUCCEED, SUCCEED_AND_DELETE
from django_sqlqueue.rules.validation import json_problem, meta_problem

if TYPE_CHECKING:
    from django_sqlqueue.db.finishing import Ended
    from django_sqlqueue.models import Job

#: ``report_progress`` writes at most this often (and always the report that reaches the total).
PROGRESS_SECONDS = 1.0
#: The longest progress message kept.
MESSAGE_LENGTH = 255

logger = logging.getLogger(__name__)

_current: ContextVar[JobHandle | None] = ContextVar("sqlqueue_current_job", default=None)


class JobHandle:
    """What a running task may know and do about its own job.

    ``with JobHandle(job, worker_id):`` makes it the current job while the block runs: a
    class rather than a generator, as it wraps every attempt of every job."""

    _token: Token[JobHandle | None]

    def __init__(self, job: Job, worker_id: str) -> None:
        self.job = job
        self.worker_id = worker_id
        self.reported_at: float | None = None
        #: The exception this attempt raised and what it was decided to become (:meth:`decision`).
        self._decided: tuple[BaseException, Failure] | None = None
        #: The success :meth:`complete_in_transaction` wrote, and whether the transaction
        #: ``@job(atomic=True)`` wrote it in has ended without a rollback (no need to look).
        self._completion: Ended | None = None
        self._completion_kept = False

    def __enter__(self) -> JobHandle:
        self._token = _current.set(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._token)

    @property
    def id(self) -> int:
        return int(self.job.pk)

    @cached_property
    def database(self) -> str:
        """The alias of the database the queue writes its jobs to (never a read replica),
        asked of the routers once per attempt."""
        # Imported here: this module is imported with the package, before the models can be.
        from django_sqlqueue.models import Job

        return Job.objects.on_queue_db().db

    @property
    def task(self) -> str:
        return self.job.task

    @property
    def queue(self) -> str:
        return self.job.queue

    @property
    def batch_id(self) -> int | None:
        """The id of the batch this job belongs to (None for none): pass it as
        ``batch=`` to add jobs to the batch (fan-out), which then finishes only once
        they have finished too."""
        return self.job.batch_id

    @property
    def attempt(self) -> int:
        """This attempt's number, from 1 (an admin Retry starts again from 1)."""
        return self.job.attempts

    @property
    def snoozes(self) -> int:
        """How many times this job snoozed before this attempt (:meth:`snooze`)."""
        return self.job.snoozes

    @property
    def cancel_requested(self) -> bool:
        """Whether someone asked to cancel this job. A worker learns of it within a
        heartbeat (``SQLQUEUE_HEARTBEAT_INTERVAL``); no query is made here."""
        return self.job.cancel_requested_at is not None

    def raise_if_cancelled(self) -> None:
        """Raise ``JobCancelled`` once a cancel was requested: the job ends ``CANCELLED``."""
        if self.cancel_requested:
            raise JobCancelled(f"job {self.id} was cancelled while it ran")

    def snooze(self, delay: datetime.timedelta | float) -> NoReturn:
        """Raise :class:`~django_sqlqueue.exceptions.Snooze`: the job runs again ``delay``
        (a timedelta or seconds) later by the database's clock, this attempt not counted."""
        raise Snooze(delay)

    def dependency_results(self) -> dict[str, Any]:
        """What each job this one was enqueued ``after`` returned, keyed by its id as a
        string (``results[str(job.pk)]``), in the order ``after=`` named them: None for
        one that returned nothing, failed (``after_failure="run"``) or is no longer
        kept. String keys, as JSON has: a task may return the dict as it is, and its
        result reads back equal. Read from the database on each call (empty when it
        waited for none)."""
        from django_sqlqueue.db import dependencies
        from django_sqlqueue.models import Job

        return dependencies.results(Job, self.database, self.id)

    def report_progress(self, done: float, total: float | None = None, message: str = "") -> bool:
        """Record how far the task is (``done`` of ``total``, with a ``message``), shown
        in the admin. Written at most once every ``PROGRESS_SECONDS`` (the report that
        reaches ``total`` always), and only while this worker still holds this attempt:
        the old owner of a rescued job writes nothing. Whether it was written.

        Raises ``ValueError`` for what no database may store as itself, checked as a
        job's arguments are: a negative ``done``, a ``total`` of 0 or less, an integer past
        64 bits, a float of 1e16 or more, a NUL or a lone surrogate in ``message``.

        Best effort: when the database refuses the write (it is away, or a lock wait
        times out), the task carries on, the failure is logged, and nothing is written.
        The write is its own savepoint inside a transaction of the task's, which a
        failure therefore leaves usable."""
        if isinstance(done, bool) or not isinstance(done, (int, float)) or not 0 <= done < math.inf:
            raise ValueError(f"done must be a number of at least 0, not {done!r}.")
        if total is not None and (
            isinstance(total, bool) or not isinstance(total, (int, float)) or not 0 < total < math.inf
        ):
            raise ValueError(f"total must be a number above 0 or None, not {total!r}.")
        if not isinstance(message, str):
            raise ValueError(f"message must be a string, not {message!r}.")
        # Checked as arguments are: a NUL or a lone surrogate, or a number past what every
        # database's JSON keeps, would be refused by one database and not another.
        progress = {"done": done, "total": total, "message": message[:MESSAGE_LENGTH]}
        if problem := json_problem(progress, "progress"):
            raise ValueError(f"{problem}.")
        now = time.monotonic()
        finished = total is not None and done >= total
        if self.reported_at is not None and now - self.reported_at < PROGRESS_SECONDS and not finished:
            return False
        self.reported_at = now
        # Imported here: this module is imported with the package, before the models can be.
        from django_sqlqueue.db.finishing import still_held
        from django_sqlqueue.models import Job

        held = still_held(Job.objects.using(self.database), self.worker_id, [self.job])
        try:
            with transaction.atomic(using=held.db):
                return bool(held.update(progress=progress))
        except DatabaseError as error:
            logger.warning("Progress of job %s not recorded: %s", self.id, error)
            return False

    @property
    def meta(self) -> dict[str, Any]:
        """The job's ``meta`` as this attempt knows it: as enqueued, with what
        :meth:`add_meta` wrote. A copy: change it through :meth:`add_meta`."""
        return dict(self.job.meta or {})

    def add_meta(self, values: Mapping[str, Any]) -> bool:
        """Add ``values`` to the job's ``meta`` (shown on its admin page), replacing the
        keys it already has, in one write fenced like every write of a worker: only while
        this worker still holds this attempt (the old owner of a rescued job writes
        nothing). Whether it was written.

        Raises ``ValueError`` for what the database would not store as itself, checked
        as a job's arguments are, and what the database raised when the write failed:
        unlike progress, meta is data the task meant to keep. The write is its own
        savepoint inside a transaction of the task's."""
        if not isinstance(values, Mapping):
            raise ValueError(f"values must be a mapping, not {type(values).__name__}.")
        return self.replace_meta({**(self.job.meta or {}), **values})

    def replace_meta(self, meta: dict[str, Any]) -> bool:
        """Make ``meta`` the job's whole ``meta``, written and checked as :meth:`add_meta`
        writes and checks: what Django's ``TaskContext.save_metadata()`` does (keys
        it leaves out are removed). Whether it was written."""
        if problem := meta_problem(meta):
            raise ValueError(f"{problem}.")
        # Imported here: this module is imported with the package, before the models can be.
        from django_sqlqueue.db.finishing import still_held
        from django_sqlqueue.models import Job

        held = still_held(Job.objects.using(self.database), self.worker_id, [self.job])
        with transaction.atomic(using=held.db):
            written = bool(held.update(meta=meta))
        if written:
            self.job.meta = meta
        return written

    def complete_in_transaction(self, result: Any = None) -> None:
        """Write this job's success, with ``result`` (JSON) as its result, inside the
        transaction open on the jobs' database, fenced on this worker and attempt as
        every finish is: the job is ``SUCCESSFUL`` (or deleted, with
        ``SQLQUEUE_RETENTION["SUCCESSFUL"]`` 0) if and when that transaction commits,
        together with what the task wrote in it, and the worker writes no other outcome
        for it. Its dependents are released and its batch counted down in the same
        transaction; ``job_succeeded`` is sent once it commits.

        Raises ``TransactionManagementError`` outside a transaction on the jobs'
        database, ``InvalidJobError`` for a result the database would not store,
        :class:`~django_sqlqueue.exceptions.JobTakenAway` when the job is no longer this
        attempt's (rescued: let it propagate, so that the transaction rolls back), and
        ``RuntimeError`` when this attempt already completed its job."""
        if self.completed_in(self.database) is not None:
            raise RuntimeError(f"job {self.id} was already completed by this attempt.")
        self._completion, self._completion_kept = _complete(self.job, self.worker_id, self.database, result), False

    @property
    def completion_written(self) -> bool:
        """Whether this attempt wrote its job's success with :meth:`complete_in_transaction`
        (rolled back since, perhaps: see :meth:`completed_in`)."""
        return self._completion is not None

    def completed_in(self, using: str) -> Ended | None:
        """The success :meth:`complete_in_transaction` wrote, while it stands on ``using``
        (the jobs' database): one query, only when the task completed its job itself,
        finds the job no longer held, as a rolled-back transaction would have left it.
        None when none was written or it was rolled back."""
        if self._completion is None or self._completion_kept:
            return self._completion
        from django_sqlqueue.db.finishing import still_held
        from django_sqlqueue.models import Job

        try:
            held = still_held(Job.objects.using(using), self.worker_id, [self.job]).exists()
        except DatabaseError as error:  # the worker's own finish is fenced all the same
            logger.warning("Could not read whether job %s's completion was committed: %s", self.id, error)
            return None
        return None if held else self._completion

    def committed(self) -> None:
        """Say that the transaction the success was written in ended without a rollback."""
        self._completion_kept = self._completion is not None

    def decision(self, error: BaseException) -> Failure:
        """What this attempt, which raised ``error``, becomes (``rules.failures.decide``),
        decided once however many ask: the Django task's backend as it tells
        ``task_finished``, each middleware as the exception passes it, and the runner,
        which writes it. The traceback is formatted and the backoff drawn once. A new
        exception (a middleware raised another) is decided anew."""
        if self._decided is None or self._decided[0] is not error:
            self._decided = (error, decide(self.job, error, self.worker_id))
        return self._decided[1]

    def __repr__(self) -> str:
        return f"<JobHandle #{self.id} {self.task} attempt {self.attempt}>"


def _complete(job: Job, worker_id: str, using: str, result: Any) -> Ended:
    """Write ``job``'s success with ``result`` in the transaction open on the jobs'
    database ``using`` (its dependents released and its batch counted down in it; its
    ``job_succeeded`` sent once it commits). What was written.

    Raises ``TransactionManagementError`` outside a transaction there (the success would
    commit alone, before the task's writes), ``InvalidJobError`` for a result the
    database would not store (the transaction must not commit a failed attempt), and
    :class:`JobTakenAway` when the fence keeps the write out."""
    # Imported here: this module is imported with the package, before the models can be.
    from django_sqlqueue.models import Job

    if not connections[using].in_atomic_block:
        raise TransactionManagementError(
            f"complete_in_transaction() writes job {job.pk}'s success in the transaction open on the jobs' "
            f"database, and none is: call it inside transaction.atomic(using={using!r})."
        )
    if problem := json_problem(result, "the result"):
        raise InvalidJobError(f"{job.task} cannot be completed: {problem}.")
    ended = Job.objects.finish_as_decided(worker_id=worker_id, succeeded={job: result}, failed={})
    if not ended:
        raise JobTakenAway(
            f"job {job.pk} ({job.task}) is no longer held by {worker_id} at attempt {job.attempts} (its lease ran "
            "out and it was rescued): the transaction is rolled back, the task's writes with it"
        )
    (written,) = ended
    if written.transition not in (SUCCEED, SUCCEED_AND_DELETE):  # a success kept, or deleted by the retention
        raise InvalidJobError(f"{job.task} cannot be completed: {written.error}")
    return written


def current_job() -> JobHandle | None:
    """The running job's handle inside a task run by a worker (or by
    ``django_sqlqueue.testing``); None anywhere else."""
    return _current.get()
