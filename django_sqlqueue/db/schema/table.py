"""The jobs table: its columns, indexes and constraints, as the abstract model that
:class:`django_sqlqueue.models.Job` completes with its manager.

The statements in ``db/`` read and write these columns. They name this class, not the
concrete ``Job``: the model holds its manager, the manager calls the statements, so
the statements cannot import the model without closing a circle."""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable
from typing import Any, TypeVar

from django.db import models

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.schema.failures import FailureIndex
from django_sqlqueue.db.schema.indexes import (
    FINISHED_AT_SET,
    FINISHED_JOBS,
    ActiveKeyConstraint,
    ExpiringIndex,
    HiddenFinishedIndex,
    HiddenStatusIndex,
    KeyedIndex,
    StatusIndex,
)
from django_sqlqueue.db.schema.names import NameField
from django_sqlqueue.rules.lifecycle import END_REASONS, JobStatus
from django_sqlqueue.rules.limits import (
    CONCURRENCY_KEY_MAX_LENGTH,
    MAX_PRIORITY,
    MIN_PRIORITY,
    QUEUE_NAME_MAX_LENGTH,
    TASK_NAME_MAX_LENGTH,
    UNIQUE_KEY_MAX_LENGTH,
)


def any_of(field: str, values: Iterable[str]) -> models.Q:
    """``field`` equal to one of ``values``, as equalities joined by OR rather than an
    IN: SQLite checks the status constraint on every claim and finish, and evaluates an
    IN of more than two values with a temporary table each time (a fifth of its work on
    those two statements); the ORs cost it next to nothing."""
    return functools.reduce(operator.or_, (models.Q(**{field: value}) for value in values))


class AbstractJob(models.Model):
    """The columns of a job; see :class:`django_sqlqueue.models.Job`."""

    id = models.BigAutoField(primary_key=True)
    queue = NameField(max_length=QUEUE_NAME_MAX_LENGTH)
    task = models.CharField(max_length=TASK_NAME_MAX_LENGTH, help_text="The registered name of the task.")
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    priority = models.SmallIntegerField(default=0, help_text="Higher runs first.")
    status = models.CharField(
        max_length=max(len(value) for value in JobStatus.values),
        choices=JobStatus.choices,
        default=JobStatus.READY,
    )
    run_at = models.DateTimeField(db_default=DatabaseNow(), help_text="Not claimed before this time.")
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts started so far, counted at claim.")
    max_attempts = models.PositiveIntegerField()
    snoozes = models.PositiveIntegerField(
        default=0,
        db_default=0,
        help_text="Times its task snoozed (raise Snooze): each gave its attempt back, uncounted.",
    )
    timeout = models.FloatField(null=True, blank=True, help_text="Seconds an attempt may run; empty for no limit.")
    enqueued_at = models.DateTimeField(db_default=DatabaseNow())
    started_at = models.DateTimeField(null=True, blank=True, help_text="When the latest attempt was claimed.")
    finished_at = models.DateTimeField(null=True, blank=True)
    worker = NameField(max_length=255, blank=True, help_text="The worker that holds or last held the job.")
    errors = models.JSONField(default=list, blank=True, help_text="Every failed attempt's exception and traceback.")
    # A copy of errors[-1]["exception_class_path"], written with it, so that the admin
    # groups failures by an index rather than by reading the JSON of every failed row.
    last_error_class = models.CharField(
        max_length=255,
        blank=True,
        default="",
        db_default="",
        help_text="The exception class of the last failed attempt; empty when none failed.",
    )
    result = models.JSONField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(
        null=True, blank=True, help_text="When someone asked to cancel the job while it ran (the database's clock)."
    )
    progress = models.JSONField(
        null=True, blank=True, help_text='The last progress its task reported: {"done", "total", "message"}.'
    )
    # Never more than concurrency_limit jobs with this key RUNNING at once (db/concurrency.py).
    # NULL, not "", when unset: the claim's partial index holds only keyed jobs.
    concurrency_key = NameField(max_length=CONCURRENCY_KEY_MAX_LENGTH, null=True, blank=True)
    concurrency_limit = models.PositiveIntegerField(null=True, blank=True)
    unique_key = NameField(  # NULL is no key: the unique index leaves those out
        max_length=UNIQUE_KEY_MAX_LENGTH,
        null=True,
        blank=True,
        help_text="No other ready or running job has this key (see the docs: Unique jobs).",
    )
    unique_until_pruned = models.BooleanField(
        default=False,
        db_default=False,
        help_text="It keeps its unique key after it ends, until it is pruned.",
    )
    # Workflows (db/dependencies.py): how many of the jobs it waits for have not finished,
    # decremented under its row lock as each finishes; and whether it runs when one failed.
    waiting_for = models.PositiveIntegerField(
        default=0, db_default=0, help_text="How many of the jobs it was enqueued after have not finished."
    )
    runs_after_failure = models.BooleanField(
        default=False,
        db_default=False,
        help_text='after_failure="run": it runs even when a job it waits for failed or was cancelled.',
    )
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Never started from this time on (the database's clock); empty for never."
    )
    end_reason = models.CharField(
        max_length=32,
        choices=[(reason, reason) for reason in END_REASONS],
        blank=True,
        default="",
        db_default="",
        help_text="Why it ended so, where its status does not say: expired (not started by its expires_at).",
    )
    # An id, not a foreign key: reading it from a claimed row is a plain attribute (the
    # finish asks it of every job), and deleting jobs stays one DELETE.
    batch_id = models.BigIntegerField(
        null=True, blank=True, help_text="The batch it belongs to (Job.objects.batch()), by id."
    )
    # NULL allowed: rows written by hand (and the benchmark's raw ones) name no meta.
    meta = models.JSONField(
        default=dict,
        null=True,
        blank=True,
        help_text="Free JSON of the caller's and the task's own (current_job().add_meta).",
    )
    # Written only by an INSERT that cannot otherwise tell its rows apart (MySQL/MariaDB:
    # a keyed insert, whose RETURNING also gives the row that held the key; MySQL 8's
    # many tagged or dependent jobs, which return no ids), and never changed.
    insert_token = NameField(
        max_length=32,
        null=True,
        blank=True,
        editable=False,
        help_text="On MySQL/MariaDB, the token of the INSERT that wrote it, where that INSERT told its rows by it.",
    )

    #: Set on the jobs ``enqueue`` and ``enqueue_many`` return: False for the job that
    #: already held the ``unique_key`` and was returned in place of a new one; None on
    #: jobs read from the table.
    created: bool | None = None
    #: The jobs (or ids) a job being enqueued waits for (``build(after=...)``); empty
    #: on jobs read from the table, whose links are ``JobDependency`` rows.
    after: tuple[Any, ...] = ()
    #: The tags ``enqueue`` writes with the job (``JobTag`` rows, once it has an id); a
    #: job read from the table has its tags in ``tag_rows``.
    new_tags: tuple[str, ...] = ()

    class Meta:
        abstract = True
        indexes = [
            # The claim: ready jobs in claim order, on all queues or on some, with their
            # deadline, so that the claim's read of candidates needs nothing but the index.
            StatusIndex(
                status=JobStatus.READY, fields=["-priority", "run_at", "id", "expires_at"], name="sqlqueue_job_ready"
            ),
            StatusIndex(
                status=JobStatus.READY,
                fields=["queue", "-priority", "run_at", "id", "expires_at"],
                name="sqlqueue_job_ready_queue",
            ),
            # The waiting jobs, by queue (stats, the admin's filter), out of the claim's indexes.
            HiddenStatusIndex(status=JobStatus.WAITING, field="queue", name="sqlqueue_job_waiting"),
            # The expiry sweep: ready jobs with a deadline, the earliest first.
            ExpiringIndex(name="sqlqueue_job_expiring"),
            # The rescue: the jobs a worker holds.
            StatusIndex(status=JobStatus.RUNNING, fields=["worker"], name="sqlqueue_job_running"),
            # The claim's count of the RUNNING jobs that hold a concurrency key.
            KeyedIndex(fields=["concurrency_key", "status"], name="sqlqueue_job_concurrency"),
            # Whether a batch still has unfinished jobs: batch-less jobs never touch it.
            KeyedIndex(fields=["batch_id", "status"], name="sqlqueue_job_batch"),
            # The admin: the overview's counts of finished jobs by queue and status (read
            # from the index alone); the finished range filter, the charts' hours and pruning
            # (with the status, so "failed in this range" is counted from the index); the
            # enqueued range filter, over jobs of every status. The first two hold finished
            # jobs only on PostgreSQL, and on MySQL/MariaDB a hidden column in place of
            # status, NULL until the job finishes.
            HiddenFinishedIndex(
                fields=["queue", "status"], name="sqlqueue_job_queue_status", over=FINISHED_JOBS, adds_column=True
            ),
            HiddenFinishedIndex(fields=["finished_at", "status"], name="sqlqueue_job_finished", over=FINISHED_AT_SET),
            models.Index(fields=["enqueued_at"], name="sqlqueue_job_enqueued"),
            # The admin's failures page: failed jobs (and on MySQL/MariaDB retrying ones)
            # by task and exception class, with when they failed, read from the index alone.
            FailureIndex(name="sqlqueue_job_failed"),
        ]
        permissions = [
            ("retry_job", "Can retry failed or cancelled jobs"),
            ("cancel_job", "Can cancel jobs (ready ones at once, running ones by request)"),
            ("run_job_now", "Can run scheduled jobs now"),
            ("edit_job", "Can edit the arguments, queue, priority, run time and attempts of jobs no worker holds"),
            ("enqueue_job", "Can enqueue jobs of registered tasks from the admin"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(priority__gte=MIN_PRIORITY, priority__lte=MAX_PRIORITY),
                name="sqlqueue_job_priority_range",
            ),
            models.CheckConstraint(condition=models.Q(max_attempts__gte=1), name="sqlqueue_job_max_attempts_min"),
            models.CheckConstraint(condition=models.Q(timeout__gt=0), name="sqlqueue_job_timeout_positive"),
            models.CheckConstraint(condition=any_of("status", JobStatus.values), name="sqlqueue_job_status_valid"),
            models.CheckConstraint(condition=~models.Q(queue=""), name="sqlqueue_job_queue_not_empty"),
            models.CheckConstraint(
                condition=models.Q(concurrency_key__isnull=True, concurrency_limit__isnull=True)
                | models.Q(concurrency_key__isnull=False, concurrency_limit__gte=1),
                name="sqlqueue_job_concurrency_pair",
            ),
            ActiveKeyConstraint(name="sqlqueue_job_unique_key", kept=True),
        ]


#: The job model a statement or a manager is given (``models.Job``): what it returns
#: is of that model, though only the table is named here.
JobT = TypeVar("JobT", bound=AbstractJob)
