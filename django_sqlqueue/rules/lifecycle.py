"""A job's life, declared once: its statuses, their sets, and every transition between
them as data (its source states, its guard, its target and the columns it writes).

Every writer of a job's status reads this table: the finisher and the release
(``db/finishing.py``), the claim, the manager's ``cancel``, the admin's actions, the
rescue, the testing helpers, the runner's outcome names and the Tasks backend's status
mapping. ``db/lifecycle.py`` turns guards into SQL; :func:`failure_transition` picks what
a failed attempt becomes. A new feature adds entries here; it never decides a status
change elsewhere. ``docs/explanation/lifecycle.md`` shows :func:`mermaid_diagram`."""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass

from django.db import models


class JobStatus(models.TextChoices):
    """A job's place in its life; the names match Django Tasks' ``TaskResultStatus``.

    ``READY`` also holds a failed attempt waiting for its retry (its ``run_at`` is later
    and its error is kept); ``FAILED`` is final and waits for a human in the admin."""

    #: Waiting for the jobs it was enqueued ``after`` to finish (since its enqueue, or since an admin
    #: Retry that found some unfinished); never claimed until released.
    WAITING = "WAITING", "Waiting"
    #: Waiting to be claimed: now, or from its ``run_at`` on (a retry, a snoozed or delayed job).
    READY = "READY", "Ready"
    #: Claimed by a worker, which holds it (``worker``) while its lease lasts.
    RUNNING = "RUNNING", "Running"
    #: Finished without an exception; its ``result`` is kept until pruned.
    SUCCESSFUL = "SUCCESSFUL", "Successful"
    #: Out of attempts (each raised, timed out or lost its worker): final, every error kept for the admin.
    FAILED = "FAILED", "Failed"
    #: Cancelled before it finished: final, never run again unless an admin retries it.
    CANCELLED = "CANCELLED", "Cancelled"


#: Why a job ended as it did, where its status does not say (``end_reason``): ``expired``,
#: a job ``CANCELLED`` by its ``expires_at`` before it started (:data:`EXPIRE`).
EXPIRED = "expired"
END_REASONS = (EXPIRED,)

#: Jobs still to run or running: what a unique key is held by, what pruning never touches.
ACTIVE = (JobStatus.WAITING, JobStatus.READY, JobStatus.RUNNING)
#: Jobs that ended: nothing moves them on but an admin Retry, or their deletion.
FINISHED = (JobStatus.SUCCESSFUL, JobStatus.FAILED, JobStatus.CANCELLED)

#: Django Tasks' ``TaskResultStatus`` of each status: Django has no cancelled result,
#: and a cancelled job will not run again, so it is ``FAILED`` there; a job waiting for
#: others will run without being enqueued again, so it is ``READY``.
TASK_RESULT_STATUS: dict[JobStatus, str] = {
    JobStatus.WAITING: "READY",
    JobStatus.READY: "READY",
    JobStatus.RUNNING: "RUNNING",
    JobStatus.SUCCESSFUL: "SUCCESSFUL",
    JobStatus.FAILED: "FAILED",
    JobStatus.CANCELLED: "FAILED",
}


class Condition(enum.Enum):
    """What a guard may require of a job; its value says it in words.

    ``db/lifecycle.py`` writes the ones a statement checks as SQL; the others are
    known to whoever makes the transition (what the task did) or enforced by the
    statement's fence or an index, as each one's words say."""

    DUE = "its run_at has come"
    NOT_DUE = "its run_at is still to come"
    NOT_EXPIRED = "it has no expires_at, or its expires_at is still to come"
    EXPIRED = "its expires_at has come"
    HELD = "its worker still holds it at the attempt it claimed (the fence)"
    STARTED = "its attempt started"
    UNSTARTED = "its worker gave it back before starting it"
    RETURNED = "its task returned a value the database stores"
    RAISED = "its attempt failed (its task raised, or its worker died: the rescue charges WorkerLost)"
    SNOOZED = "its task raised Snooze: its attempt neither succeeded nor failed, and is not counted"
    SNOOZES_LEFT = "snoozes < its task's max_snoozes"
    SNOOZES_SPENT = "snoozes >= its task's max_snoozes"
    REFUSED = "the database refused its outcome, and the error saying so (its errors are as much as a row takes)"
    CANCEL_REQUESTED = "someone asked to cancel it (or its task raised JobCancelled)"
    NOT_CANCEL_REQUESTED = "nobody asked to cancel it"
    ATTEMPTS_LEFT = "attempts < max_attempts"
    ATTEMPTS_SPENT = "attempts >= max_attempts"
    BACKOFF_DECLINED = (
        "its task's backoff returned None (no more retries), or raised or returned no delay (the error says so)"
    )
    UNIQUE_KEY_FREE = "no other active job holds its unique_key (the unique index)"
    NO_SUCCESS_RETENTION = 'SQLQUEUE_RETENTION["SUCCESSFUL"] is 0'
    RETENTION_PASSED = "it finished longer ago than SQLQUEUE_RETENTION keeps its status"
    WAITS_FOR_UNFINISHED = "some job it was enqueued after has not finished"
    NOTHING_UNFINISHED = "it was enqueued after no job, or after jobs that have all finished"
    DEPENDENCIES_FINISHED = "every job it was enqueued after has finished (waiting_for = 0)"
    DEPENDENCY_FAILED = (
        'a job it was enqueued after ended FAILED or CANCELLED or was deleted, and it has after_failure="cancel"'
    )
    NO_DEPENDENCY_FAILED = 'none of the jobs it was enqueued after failed, or it has after_failure="run"'
    CANCELLED_BY_DEPENDENCY = "it was cancelled without running by the end of a job it waits for (cancel_dependent)"
    UNIQUE_KEY_HELD = 'it holds the unique_key of a job enqueued with on_conflict="replace"'


@dataclass(frozen=True)
class Transition:
    """One way a job changes: from any of ``sources`` (none: a new row) to ``target``
    (None: the row is deleted), when every condition of ``guard`` holds, writing
    ``writes`` (``status`` among them whenever the status changes)."""

    name: str
    sources: tuple[JobStatus, ...]
    target: JobStatus | None
    guard: frozenset[Condition]
    writes: tuple[str, ...]
    #: Who makes it.
    by: str
    #: For a transition that ends an attempt: its one-word outcome, as the runner logs
    #: it, ``job_finished`` sends it, the metrics label it and ``run_jobs`` counts it.
    #: Each outcome has its signal (``signals.job_ended``), which every transition
    #: with that outcome sends once written: a job cancelled before it started (a ready
    #: one, a dependent of a failed job, one given back unstarted after a cancel request)
    #: is ``cancelled`` too, and ``expire`` (no attempt) sends ``expired`` from the expiry
    #: sweep. ``signals.SILENT`` says why each transition without a signal sends none.
    outcome: str = ""

    @property
    def status(self) -> JobStatus:
        """:attr:`target`, for a transition that keeps its row."""
        if self.target is None:
            raise ValueError(f"{self.name} deletes its row: it has no status.")
        return self.target


def _transition(
    name: str,
    sources: Collection[JobStatus],
    target: JobStatus | None,
    guard: Collection[Condition],
    writes: Collection[str],
    by: str,
    outcome: str = "",
) -> Transition:
    return Transition(name, tuple(sources), target, frozenset(guard), tuple(writes), by, outcome)


_READY, _RUNNING, _WAITING = JobStatus.READY, JobStatus.RUNNING, JobStatus.WAITING
_C = Condition
_ERROR = ("errors", "last_error_class")
_RELEASED = ("status", "attempts", "started_at")
#: A new row's columns: what it runs, and how.
_ENQUEUED = (
    *("status", "queue", "task", "args", "kwargs", "priority", "run_at", "enqueued_at", "max_attempts", "timeout"),
    *("concurrency_key", "concurrency_limit", "unique_key", "unique_until_pruned"),
    *("expires_at", "meta"),
)

ENQUEUE = _transition(
    "enqueue",
    (),
    _READY,
    (_C.UNIQUE_KEY_FREE,),
    _ENQUEUED,
    "Job.objects.enqueue and its kin, the Tasks backend, the schedules",
)
ENQUEUE_WAITING = _transition(
    "enqueue_waiting",
    (),
    _WAITING,
    (_C.UNIQUE_KEY_FREE, _C.WAITS_FOR_UNFINISHED),
    (*_ENQUEUED, "waiting_for", "runs_after_failure"),
    "Job.objects.enqueue and enqueue_many with after= (the row and its links, in one transaction)",
)
UNBLOCK = _transition(
    "unblock",
    (_WAITING,),
    _READY,
    (_C.DEPENDENCIES_FINISHED, _C.NO_DEPENDENCY_FAILED),
    ("status",),
    "the finish of the last job it waits for, in the same transaction; the maintenance leader's sweep",
)
CANCEL_DEPENDENT = _transition(
    "cancel_dependent",
    (_WAITING,),
    JobStatus.CANCELLED,
    (_C.DEPENDENCY_FAILED,),
    ("status", *_ERROR, "finished_at"),
    "the finish or cancel of a job it waits for, in the same transaction; the maintenance leader's sweep",
    outcome="cancelled",
)
CLAIM = _transition(
    "claim",
    (_READY,),
    _RUNNING,
    (_C.DUE, _C.NOT_EXPIRED),
    ("status", "worker", "started_at", "attempts"),
    "a worker's claim (its queue not paused, under its concurrency and rate limits)",
)
SUCCEED = _transition(
    "succeed",
    (_RUNNING,),
    JobStatus.SUCCESSFUL,
    (_C.HELD, _C.STARTED, _C.RETURNED),
    ("status", "finished_at", "result"),
    "the worker's finisher; an atomic task's own transaction (runner/completion.py)",
    outcome="succeeded",
)
SUCCEED_AND_DELETE = _transition(
    "succeed_and_delete",
    (_RUNNING,),
    None,
    (_C.HELD, _C.STARTED, _C.RETURNED, _C.NO_SUCCESS_RETENTION),
    (),
    "the worker's finisher; an atomic task's own transaction (runner/completion.py)",
    outcome="succeeded",
)
RETRY = _transition(
    "retry",
    (_RUNNING,),
    _READY,
    (_C.HELD, _C.STARTED, _C.RAISED, _C.NOT_CANCEL_REQUESTED, _C.ATTEMPTS_LEFT),
    ("status", *_ERROR, "run_at"),
    "the worker's finisher, after a backoff; the rescue, for a dead worker's started job",
    outcome="retried",
)
FAIL = _transition(
    "fail",
    (_RUNNING,),
    JobStatus.FAILED,
    (_C.HELD, _C.STARTED, _C.RAISED, _C.NOT_CANCEL_REQUESTED, _C.ATTEMPTS_SPENT),
    ("status", *_ERROR, "finished_at"),
    "the worker's finisher; the rescue, for a dead worker's started job",
    outcome="failed",
)
SNOOZE = _transition(
    "snooze",
    (_RUNNING,),
    _READY,
    (_C.HELD, _C.STARTED, _C.SNOOZED, _C.NOT_CANCEL_REQUESTED, _C.SNOOZES_LEFT),
    ("status", "run_at", "attempts", "snoozes"),
    "the worker's finisher, its attempt given back (attempts - 1) and its snoozes counted (snoozes + 1)",
    outcome="snoozed",
)
SNOOZE_SPENT = _transition(
    "snooze_spent",
    (_RUNNING,),
    JobStatus.FAILED,
    (_C.HELD, _C.STARTED, _C.SNOOZED, _C.NOT_CANCEL_REQUESTED, _C.SNOOZES_SPENT),
    ("status", *_ERROR, "finished_at"),
    "the worker's finisher (its error SnoozedTooOften), whatever attempts it has left",
    outcome="failed",
)
GIVE_UP = _transition(
    "give_up",
    (_RUNNING,),
    JobStatus.FAILED,
    (_C.HELD, _C.STARTED, _C.RAISED, _C.NOT_CANCEL_REQUESTED, _C.ATTEMPTS_LEFT, _C.BACKOFF_DECLINED),
    ("status", *_ERROR, "finished_at"),
    "the worker's finisher, whatever attempts it has left; the rescue, for a dead worker's started job",
    outcome="failed",
)
FAIL_UNRECORDED = _transition(
    "fail_unrecorded",
    (_RUNNING,),
    JobStatus.FAILED,
    (_C.HELD, _C.STARTED, _C.REFUSED),
    ("status", "finished_at"),
    "the worker's finisher (its errors kept as they were, and the refusal logged)",
    outcome="failed",
)
STOP = _transition(
    "stop",
    (_RUNNING,),
    JobStatus.CANCELLED,
    (_C.HELD, _C.STARTED, _C.RAISED, _C.CANCEL_REQUESTED),
    ("status", *_ERROR, "finished_at"),
    "the worker's finisher; the rescue (a job its worker was stopped in, past SQLQUEUE_CANCEL_GRACE)",
    outcome="cancelled",
)
RELEASE = _transition(
    "release",
    (_RUNNING,),
    _READY,
    (_C.HELD, _C.UNSTARTED, _C.NOT_CANCEL_REQUESTED),
    _RELEASED,
    "a stopping worker; the rescue, for a dead worker's unstarted job",
)
RELEASE_CANCELLED = _transition(
    "release_cancelled",
    (_RUNNING,),
    JobStatus.CANCELLED,
    (_C.HELD, _C.UNSTARTED, _C.CANCEL_REQUESTED),
    (*_RELEASED, "finished_at"),
    "a stopping worker; the rescue, for a dead worker's unstarted job",
    outcome="cancelled",
)
REQUEST_CANCEL = _transition(
    "request_cancel",
    (_RUNNING,),
    _RUNNING,
    (_C.NOT_CANCEL_REQUESTED,),
    ("cancel_requested_at",),
    "Job.objects.cancel, the admin's Cancel (its worker learns of it with its heartbeat)",
)
CANCEL = _transition(
    "cancel",
    (_WAITING, _READY),
    JobStatus.CANCELLED,
    (),
    ("status", "finished_at"),
    "Job.objects.cancel, the admin's Cancel",
    outcome="cancelled",
)
EXPIRE = _transition(
    "expire",
    (_READY,),
    JobStatus.CANCELLED,
    (_C.EXPIRED,),
    ("status", "finished_at", "end_reason"),
    "the maintenance leader's expiry sweep (a job not started by its expires_at is never started)",
    outcome="expired",
)
#: What an admin Retry writes besides the status: a fresh budget of attempts and
#: snoozes, and no deadline; the earlier errors stay.
_RETRIED = (
    *("status", "run_at", "attempts", "snoozes", "started_at", "finished_at", "worker", "cancel_requested_at"),
    *("expires_at", "end_reason"),
)
ADMIN_RETRY = _transition(
    "admin_retry",
    (JobStatus.FAILED, JobStatus.CANCELLED),
    _READY,
    (_C.UNIQUE_KEY_FREE, _C.NOTHING_UNFINISHED),
    _RETRIED,
    "the admin's Retry (a fresh budget of attempts and snoozes, and no deadline; the earlier errors stay)",
)
ADMIN_RETRY_WAITING = _transition(
    "admin_retry_waiting",
    (JobStatus.FAILED, JobStatus.CANCELLED),
    _WAITING,
    (_C.UNIQUE_KEY_FREE, _C.WAITS_FOR_UNFINISHED),
    (*_RETRIED, "waiting_for"),
    "the admin's Retry of a job some job it was enqueued after has not finished (it was cancelled while it "
    "waited, or that job was retried since): it waits for them again, never run before them",
)
RETRY_DEPENDENT = _transition(
    "retry_dependent",
    (JobStatus.CANCELLED,),
    _WAITING,
    (_C.CANCELLED_BY_DEPENDENCY, _C.WAITS_FOR_UNFINISHED),
    ("status", "waiting_for", "finished_at"),
    "the admin's Retry with cancelled dependents, in the transaction of the admin_retry of the job whose "
    "end cancelled it (its errors stay)",
)
RUN_NOW = _transition(
    "run_now",
    (_READY,),
    _READY,
    (_C.NOT_DUE,),
    ("run_at",),
    "the admin's Run now (a waiting job is not ready: it runs once the jobs it waits for have finished)",
)
REPLACE = _transition(
    "replace",
    (_READY,),
    _READY,
    (_C.UNIQUE_KEY_HELD,),
    ("args", "kwargs", "run_at"),
    'Job.objects.enqueue and enqueue_many with on_conflict="replace" (a running holder is left alone)',
)
#: The statuses of the jobs a person may edit (``admin_edit_*``): every one no worker holds
#: that may still run, or run again after a Retry; never a running or a successful job.
EDITABLE = (_WAITING, _READY, JobStatus.FAILED, JobStatus.CANCELLED)
#: What an edit writes: what the job runs and how; a key derived from the arguments
#: (``@job(unique=...)``, ``@job(concurrency=...)``) is derived again from the new ones.
_EDITED = ("args", "kwargs", "queue", "priority", "run_at", "max_attempts", "unique_key", "concurrency_key")
#: The admin's Edit, one per status it keeps: the job stays as it was but for what it runs.
ADMIN_EDITS = tuple(
    _transition(
        f"admin_edit_{status.value.lower()}",
        (status,),
        status,
        (_C.UNIQUE_KEY_FREE,),
        _EDITED,
        "the admin's Edit of a job no worker holds, compare-and-set on the status and attempts the person saw",
    )
    for status in EDITABLE
)
DELETE = _transition(
    "delete",
    (_WAITING, _READY, *FINISHED),
    None,
    (),
    (),
    "the admin's Delete (never a running job: its outcome would have nowhere to go)",
)
PRUNE = _transition(
    "prune",
    FINISHED,
    None,
    (_C.RETENTION_PASSED,),
    (),
    "sqlqueue_prune and the maintenance leader",
)

#: Every transition, by name.
TRANSITIONS: dict[str, Transition] = {
    transition.name: transition
    for transition in (
        ENQUEUE,
        ENQUEUE_WAITING,
        UNBLOCK,
        CANCEL_DEPENDENT,
        CLAIM,
        SUCCEED,
        SUCCEED_AND_DELETE,
        RETRY,
        FAIL,
        GIVE_UP,
        FAIL_UNRECORDED,
        STOP,
        SNOOZE,
        SNOOZE_SPENT,
        RELEASE,
        RELEASE_CANCELLED,
        REQUEST_CANCEL,
        CANCEL,
        EXPIRE,
        ADMIN_RETRY,
        ADMIN_RETRY_WAITING,
        RETRY_DEPENDENT,
        RUN_NOW,
        REPLACE,
        *ADMIN_EDITS,
        DELETE,
        PRUNE,
    )
}

#: What a failed attempt may become: exactly one guard holds for any job.
AFTER_FAILURE = (STOP, RETRY, FAIL)
#: What a snooze may become when nobody asked to cancel the job (a snooze of a job
#: someone asked to cancel is decided as a failure: ``stop``).
AFTER_SNOOZE = (SNOOZE, SNOOZE_SPENT)
#: What a job given back unstarted becomes.
AFTER_RELEASE = (RELEASE_CANCELLED, RELEASE)
#: What an admin Retry makes of a failed or cancelled job: exactly one guard holds.
ADMIN_RETRIES = (ADMIN_RETRY, ADMIN_RETRY_WAITING)
#: What a rescue may make of a dead worker's jobs: its started ones failed, the others released.
RESCUE = (*AFTER_FAILURE, *AFTER_RELEASE)
#: The one-word outcomes, in ``run_jobs``' order: of an attempt, and ``expired`` (a job
#: ended before any attempt).
OUTCOMES = tuple(
    dict.fromkeys(
        # An attempt's endings first (from RUNNING), each in the table's order: sorted() is stable.
        transition.outcome
        for transition in sorted(TRANSITIONS.values(), key=lambda transition: _RUNNING not in transition.sources)
        if transition.outcome
    )
)
#: The status each outcome writes (``retried`` and ``snoozed`` both ``READY``).
OUTCOME_STATUS: dict[str, JobStatus] = {
    transition.outcome: transition.target
    for transition in TRANSITIONS.values()
    if transition.outcome and transition.target is not None
}


def chosen(transitions: Collection[Transition], facts: Collection[Condition]) -> Transition:
    """The one of ``transitions`` whose guard ``facts`` satisfy. Raises ``LookupError``
    when none or several do: their guards must be exclusive and exhaustive."""
    matching = [transition for transition in transitions if transition.guard <= set(facts)]
    if len(matching) != 1:
        names = ", ".join(transition.name for transition in matching) or "none"
        raise LookupError(f"{names} of {[t.name for t in transitions]} fit {sorted(f.name for f in facts)}")
    return matching[0]


def failure_transition(*, attempts: int, max_attempts: int, cancelled: bool) -> Transition:
    """What a held, started attempt that failed becomes (:data:`AFTER_FAILURE`):
    ``stop`` when it was cancelled, else ``retry`` while attempts are left, else ``fail``."""
    return _AFTER_FAILURE_BY[cancelled, attempts < max_attempts]


_AFTER_FAILURE_BY = {
    (cancelled, left): chosen(
        AFTER_FAILURE,
        {
            _C.HELD,
            _C.STARTED,
            _C.RAISED,
            _C.CANCEL_REQUESTED if cancelled else _C.NOT_CANCEL_REQUESTED,
            _C.ATTEMPTS_LEFT if left else _C.ATTEMPTS_SPENT,
        },
    )
    for cancelled in (False, True)
    for left in (False, True)
}


def admin_retry_transition(*, unfinished: int) -> Transition:
    """What an admin Retry makes of a job :data:`ADMIN_RETRIES` applies to, that
    ``unfinished`` jobs it was enqueued after have not finished: ``admin_retry`` (ready
    now) for none, else ``admin_retry_waiting``."""
    waits = _C.WAITS_FOR_UNFINISHED if unfinished else _C.NOTHING_UNFINISHED
    return chosen(ADMIN_RETRIES, {_C.UNIQUE_KEY_FREE, waits})


def snooze_transition(*, snoozes: int, max_snoozes: int) -> Transition:
    """What a held, started attempt that snoozed becomes when nobody asked to cancel its
    job (:data:`AFTER_SNOOZE`): ``snooze`` while its task's ``max_snoozes`` is not
    reached, else ``snooze_spent``. ``snoozes`` counts the earlier ones."""
    budget = _C.SNOOZES_LEFT if snoozes < max_snoozes else _C.SNOOZES_SPENT
    return chosen(AFTER_SNOOZE, {_C.HELD, _C.STARTED, _C.SNOOZED, _C.NOT_CANCEL_REQUESTED, budget})


def mermaid_diagram() -> str:
    """The transitions as a Mermaid ``stateDiagram-v2``: a new row comes from ``[*]``,
    a deleted one goes to it."""
    lines = ["stateDiagram-v2"]
    for transition in TRANSITIONS.values():
        target = "[*]" if transition.target is None else transition.target.value
        sources = [source.value for source in transition.sources] or ["[*]"]
        lines.extend(f"    {source} --> {target}: {transition.name}" for source in sources)
    return "\n".join(lines) + "\n"
