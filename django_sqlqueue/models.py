from __future__ import annotations

import datetime
from typing import Any

from django.db import models

from django_sqlqueue.conf import conf
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.schema.names import NameField
from django_sqlqueue.db.schema.table import AbstractJob
from django_sqlqueue.db.waiting import in_thread
from django_sqlqueue.managers import JobManager
from django_sqlqueue.rules.batches import DESCRIPTION_MAX_LENGTH
from django_sqlqueue.rules.lifecycle import JobStatus
from django_sqlqueue.rules.limits import (
    CONCURRENCY_KEY_MAX_LENGTH,
    QUEUE_NAME_MAX_LENGTH,
    RATE_LIMIT_NAME_MAX_LENGTH,
    SCHEDULE_KEY_MAX_LENGTH,
    TAG_MAX_LENGTH,
    TASK_NAME_MAX_LENGTH,
)
from django_sqlqueue.rules.recurrence import DEFAULT_MISSED, MISSED, DefinedIn

__all__ = [
    "ConcurrencyKey",
    "FinishedHour",
    "Job",
    "JobBatch",
    "JobDependency",
    "JobStatus",
    "JobTag",
    "Leader",
    "PausedQueue",
    "RateBucket",
    "Schedule",
    "Worker",
]


class Job(AbstractJob):
    """One call of a registered task, from enqueue to its final outcome.

    A job leaves the queue only by succeeding, by spending its attempts (``FAILED``,
    kept for triage) or by being cancelled. Times are written with the database's
    clock, never a worker's."""

    objects = JobManager()

    def __str__(self) -> str:
        return f"#{self.pk} {self.task} [{self.status}]"

    def tag_names(self) -> list[str]:
        """Its tags, in name order (one query)."""
        return sorted(self.tag_rows.values_list("tag", flat=True))

    def wait(self, timeout: float | None = None) -> Job:
        """Wait until it is ``SUCCESSFUL``, ``FAILED`` or ``CANCELLED``, and read it
        again: itself, refreshed (``Job.objects.wait``, which says what a timeout, a
        transaction and a deleted row do)."""
        waited = Job.objects.wait(self, timeout)
        for field in self._meta.concrete_fields:
            setattr(self, field.attname, getattr(waited, field.attname))
        return self

    async def await_finished(self, timeout: float | None = None) -> Job:
        """:meth:`wait` for async code, run in a thread of its own (its connections
        closed after), so that the event loop and the request's other queries go on."""
        return await in_thread(self.wait)(timeout)


class JobTag(models.Model):
    """One tag of one job (``enqueue(tags=[...])``): a row each, so that
    ``Job.objects.tagged(tag)`` reads the index on ``(tag, job)`` on every database
    rather than the JSON of every job.

    Deleted with its job by the database itself: the foreign key is declared
    ``ON DELETE CASCADE`` in the database (``db/tagging.py``), so the statements that
    delete jobs (pruning, a success not kept, the admin) leave no tag behind and need
    not know tags exist. Django is told nothing of it (``DO_NOTHING``, no constraint of
    its own), which keeps those deletes one statement."""

    job = models.ForeignKey(Job, on_delete=models.DO_NOTHING, db_constraint=False, related_name="tag_rows")
    tag = models.CharField(max_length=TAG_MAX_LENGTH)

    class Meta:
        default_permissions = ()
        constraints = [models.UniqueConstraint(fields=["tag", "job"], name="sqlqueue_jobtag_tag_job")]

    def __str__(self) -> str:
        return f"{self.tag} on #{self.job_id}"


class JobDependency(models.Model):
    """One link of a workflow: ``child`` was enqueued ``after`` ``parent`` (``db/dependencies.py``).

    ``settled`` turns True, once, under the link's row lock, in the transaction that
    settles ``parent``'s end right after its finish (or that enqueued ``child`` after an
    already finished one); the same transaction takes one off the child's
    ``waiting_for``. It turns False again when an admin Retry brings ``child`` back
    with ``parent`` (``db/dependents.py``).

    Neither end is a database foreign key, so deleting jobs stays one fast ``DELETE``
    (Django would read every row first to cascade): pruning and the admin's delete
    delete a deleted child's links with it, and pruning never deletes a job something
    still waits for; a child deleted otherwise loses its links when its parent's end is
    settled. A parent deleted otherwise (the admin) leaves its links, and the maintenance
    leader's sweep then cancels (or releases, with ``after_failure="run"``) what waited
    for it, saying why."""

    child = models.ForeignKey(
        Job, on_delete=models.DO_NOTHING, db_constraint=False, related_name="dependencies", db_index=False
    )
    parent = models.ForeignKey(
        Job, on_delete=models.DO_NOTHING, db_constraint=False, related_name="dependents", db_index=False
    )
    settled = models.BooleanField(default=False, help_text="The parent has finished and the child counted it.")

    class Meta:
        default_permissions = ()
        constraints = [models.UniqueConstraint(fields=["child", "parent"], name="sqlqueue_dependency_unique")]
        # Led by settled: the finish asks first whether any link is unsettled at all.
        indexes = [models.Index(fields=["settled", "parent"], name="sqlqueue_dependency_unsettled")]

    def __str__(self) -> str:
        return f"#{self.child_id} after #{self.parent_id}"


class JobBatch(models.Model):
    """Jobs enqueued together (``Job.objects.batch()``) and the callbacks enqueued once
    they have all finished (``db/batches.py``).

    ``pending`` counts down, under this row's lock, in the transaction of each fenced
    finish that ends one of its jobs; the finish that takes it to 0 checks that no job
    of the batch is still unfinished, and then, in the same transaction, enqueues the
    callbacks and sets ``finished_at`` by compare-and-set on ``finished_at IS NULL``.
    Every other path that ends jobs (cancelled, expired, cancelled by a workflow, given
    back after a cancel request) recounts ``pending`` under this lock in its own
    transaction, and completes the batch at 0; the maintenance leader's sweep completes
    what none counted (jobs deleted before they finished)."""

    description = models.CharField(max_length=DESCRIPTION_MAX_LENGTH, blank=True, default="")
    callbacks = models.JSONField(
        default=dict, blank=True, help_text="on_success, on_failure, on_finish: each a task with its arguments."
    )
    total = models.PositiveIntegerField(default=0, help_text="The jobs enqueued in it, those added later among them.")
    pending = models.IntegerField(default=0, help_text="Its jobs whose finish has not counted down yet.")
    succeeded_unkept = models.PositiveIntegerField(
        default=0, help_text="Its jobs that succeeded and were not kept (SQLQUEUE_RETENTION)."
    )
    created_at = models.DateTimeField(db_default=DatabaseNow())
    finished_at = models.DateTimeField(null=True, blank=True, help_text="When its last job finished.")
    succeeded = models.PositiveIntegerField(null=True, blank=True, help_text="Counted when it finished.")
    failed = models.PositiveIntegerField(
        null=True, blank=True, help_text="Failed, cancelled, expired or deleted jobs, counted when it finished."
    )
    callback_jobs = models.JSONField(
        default=dict, blank=True, help_text="The id of each callback enqueued, or why it could not be."
    )

    class Meta:
        default_permissions = ("view",)
        verbose_name_plural = "job batches"
        # The sweep's open batches, and pruning's finished ones.
        indexes = [models.Index(fields=["finished_at"], name="sqlqueue_batch_finished")]

    def __str__(self) -> str:
        return f"batch {self.pk}" + (f": {self.description}" if self.description else "")


class WorkerQuerySet(models.QuerySet["Worker"]):
    """Filters over the worker registry."""

    def expired(self) -> WorkerQuerySet:
        """Workers whose last heartbeat is older than ``SQLQUEUE_LEASE`` by the database's clock."""
        return self.filter(heartbeat_at__lt=_lease_start())

    def alive(self) -> WorkerQuerySet:
        """Workers that have sent a heartbeat within ``SQLQUEUE_LEASE``."""
        return self.filter(heartbeat_at__gte=_lease_start())


def _lease_start() -> Any:
    return DatabaseNow() - datetime.timedelta(seconds=conf.SQLQUEUE_LEASE)


class Worker(models.Model):
    """One running worker process; the jobs it holds name it in ``Job.worker``.

    Its heartbeat (the database's time) keeps its jobs its own: when it stops beating
    for longer than the lease, any supervisor gives its jobs back to the queue."""

    name = NameField(max_length=255, unique=True)
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    queues = models.JSONField(null=True, blank=True, help_text="The queues it claims from; empty for all.")
    started_at = models.DateTimeField(db_default=DatabaseNow())
    heartbeat_at = models.DateTimeField(db_default=DatabaseNow())
    jobs_succeeded = models.PositiveBigIntegerField(default=0)
    jobs_failed = models.PositiveBigIntegerField(default=0)
    candidates_lost = models.PositiveBigIntegerField(
        default=0, help_text="Ready jobs its claims found locked by another worker first (MySQL/MariaDB only)."
    )

    objects = WorkerQuerySet.as_manager()

    def __str__(self) -> str:
        return self.name


class Schedule(models.Model):
    """One recurring job: a ``SQLQUEUE_SCHEDULE`` entry, written from settings when a
    supervisor starts, or an entry defined in the admin; either advanced tick by tick.

    ``last_tick_at`` and ``revision`` are the compare-and-set that makes each tick fire
    once: a supervisor moves ``last_tick_at`` from the value it read to the tick it
    enqueues, in the transaction that inserts the job, only if ``revision`` is still the
    one it read; only one supervisor can move it from any one value, and every write of
    the definition (an edit in the admin, a sync from settings) or of its jobs ("run
    now") moves ``revision`` on, so a tick read before an edit writes nothing and the
    next check reads the edit."""

    key = NameField(
        max_length=SCHEDULE_KEY_MAX_LENGTH,
        unique=True,
        help_text="Its name: its key in SQLQUEUE_SCHEDULE, or the one given in the admin.",
    )
    defined_in = models.CharField(
        max_length=max(map(len, DefinedIn.values)),
        choices=DefinedIn.choices,
        default=DefinedIn.SETTINGS,
        editable=False,
        help_text="SQLQUEUE_SCHEDULE (read-only in the admin) or the admin.",
    )
    task = models.CharField(max_length=TASK_NAME_MAX_LENGTH)
    expression = models.CharField(max_length=255, help_text="A cron expression, or every N seconds.")
    cron = models.CharField(
        max_length=255, blank=True, default="", help_text="Five fields, such as 0 3 * * * (03:00 every day)."
    )
    every = models.FloatField(null=True, blank=True, help_text="Seconds between ticks, instead of cron.")
    tz = models.CharField("time zone", max_length=64, help_text="Such as Europe/Paris: cron's times are its.")
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    queue = NameField(
        max_length=QUEUE_NAME_MAX_LENGTH, blank=True, default="", help_text="Empty for the task's own queue."
    )
    priority = models.SmallIntegerField(null=True, blank=True)
    missed = models.CharField(
        max_length=max(map(len, MISSED)),
        choices=[(policy, policy) for policy in MISSED],
        default=DEFAULT_MISSED,
        help_text="The ticks that passed while no supervisor ran: enqueue the latest, none, or all.",
    )
    enabled = models.BooleanField(default=True)
    last_tick_at = models.DateTimeField(help_text="Every tick up to this time is done (enqueued or skipped).")
    next_tick_at = models.DateTimeField(null=True, blank=True, help_text="When it is next due.")
    last_run_at = models.DateTimeField(null=True, blank=True, help_text="The tick of the last job it enqueued.")
    # Not a foreign key: the job may be pruned long before the schedule changes.
    last_job_id = models.BigIntegerField(null=True, blank=True)
    recent_jobs = models.JSONField(
        default=list, blank=True, editable=False, help_text="Its last jobs' ids, newest first."
    )
    revision = models.PositiveIntegerField(
        default=0, editable=False, help_text="Moves on at every write but a tick's (see the class)."
    )

    class Meta:
        indexes = [models.Index(fields=["enabled", "next_tick_at"], name="sqlqueue_schedule_due")]
        permissions = [
            ("enable_schedule", "Can enable and disable schedules"),
            ("run_schedule_now", "Can run scheduled entries now"),
        ]

    def __str__(self) -> str:
        return self.key


class Leader(models.Model):
    """A lease on a role (``maintenance``: rescue, recurring jobs, pruning) that one
    ``runworkers`` supervisor holds at a time, until ``expires_at`` by the database's
    clock; its holder renews it, and any other takes it over once it has expired."""

    role = NameField(max_length=50, unique=True)
    holder = NameField(max_length=255, help_text="The supervisor: host:pid, after --name-prefix.")
    acquired_at = models.DateTimeField(db_default=DatabaseNow(), help_text="When this holder took it.")
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.role}: {self.holder}"


class PausedQueue(models.Model):
    """A queue workers do not claim from until it is resumed (``pause_queue``).

    Its jobs stay ``READY`` and can still be enqueued; the jobs already running finish.
    One row per paused queue, so pausing twice is pausing once."""

    queue = NameField(max_length=QUEUE_NAME_MAX_LENGTH, primary_key=True)
    reason = models.CharField(max_length=255, blank=True, default="")
    paused_at = models.DateTimeField(db_default=DatabaseNow())

    class Meta:
        ordering = ["queue"]
        default_permissions = ()
        permissions = [
            ("pause_queue", "Can pause queues"),
            ("resume_queue", "Can resume paused queues"),
        ]

    def __str__(self) -> str:
        return self.queue


class FinishedHour(models.Model):
    """The jobs of one queue that succeeded and failed for good in one hour (UTC) of the
    database's clock, counted once the hour is over (``db/rollup.py``), for the admin's
    7-day chart: it reads these few rows rather than every job of the week, and they
    outlive the jobs that pruning deletes.

    Each counted hour also has a row with the empty queue name, holding the totals of
    every queue: it says the hour is counted (an hour without jobs has that row alone),
    and the unique index on hour and queue makes counting an hour twice impossible."""

    hour = models.DateTimeField()
    queue = NameField(max_length=QUEUE_NAME_MAX_LENGTH, blank=True)
    succeeded = models.PositiveBigIntegerField()
    failed = models.PositiveBigIntegerField()

    class Meta:
        default_permissions = ()
        constraints = [models.UniqueConstraint(fields=["hour", "queue"], name="sqlqueue_finishedhour_unique")]

    def __str__(self) -> str:
        return f"{self.queue or 'all queues'} at {self.hour:%Y-%m-%d %H}:00: {self.succeeded} ok, {self.failed} failed"


class ConcurrencyKey(models.Model):
    """A concurrency key some job has been claimed under: the row a claim locks (in key
    order) before it counts the key's ``RUNNING`` jobs, so that two claimers never
    both take its last slot. It holds no count: the jobs table is the only truth."""

    key = NameField(max_length=CONCURRENCY_KEY_MAX_LENGTH, primary_key=True)

    class Meta:
        default_permissions = ()

    def __str__(self) -> str:
        return self.key


class RateBucket(models.Model):
    """The token bucket of one ``SQLQUEUE_RATE_LIMITS`` entry, shared by every worker: a
    claim locks it, adds the tokens flowed in since ``updated_at`` (the database's
    clock), takes one per job it starts and writes back what is left."""

    name = NameField(max_length=RATE_LIMIT_NAME_MAX_LENGTH, primary_key=True)
    tokens = models.FloatField()
    updated_at = models.DateTimeField(db_default=DatabaseNow())

    class Meta:
        default_permissions = ()

    def __str__(self) -> str:
        return f"{self.name}: {self.tokens:.1f}"
