"""Signals sent through a job's life, for hooks of your own (metrics, logging, tracing).
Each is sent with ``sender`` the job's model and ``job``; a receiver's exception is
logged and changes nothing about the job, or about the other receivers.

- :data:`job_enqueued`: once the transaction that wrote the job commits, in the process
  and thread that enqueued it; :data:`job_unblocked` once a job that waited for others
  is released (``READY``).
- :data:`job_started` and :data:`job_finished`: around each attempt, in the worker
  thread that runs it, outside any transaction (the attempt's claim committed before).
- One signal per way an attempt ends, :data:`job_ended`, by the outcomes of the
  state machine (``rules.lifecycle.OUTCOMES``): :data:`job_succeeded`,
  :data:`job_retried` (failed, a retry to come), :data:`job_failed` (failed for good),
  :data:`job_cancelled` and :data:`job_snoozed`. Sent once the statement that wrote the outcome committed,
  in the process and thread that wrote it (a worker's main thread, the caller of
  ``Job.objects.finish`` or of ``Job.objects.cancel``), once per job: an outcome that the fence kept out (the job was
  rescued from its worker meanwhile) sends nothing.

Every transition of ``rules.lifecycle.TRANSITIONS`` sends its signal (:func:`signal_of`)
or is in :data:`SILENT`, which says why it sends none."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.dispatch import Signal

from django_sqlqueue.rules.lifecycle import (
    ADMIN_EDITS,
    ADMIN_RETRY,
    ADMIN_RETRY_WAITING,
    CLAIM,
    DELETE,
    ENQUEUE,
    ENQUEUE_WAITING,
    EXPIRE,
    FAIL,
    OUTCOMES,
    PRUNE,
    RELEASE,
    REPLACE,
    REQUEST_CANCEL,
    RETRY,
    RETRY_DEPENDENT,
    RUN_NOW,
    SNOOZE,
    STOP,
    SUCCEED,
    UNBLOCK,
    Transition,
)

if TYPE_CHECKING:
    from django_sqlqueue.db.finishing import Ended
    from django_sqlqueue.db.schema.table import AbstractJob

logger = logging.getLogger(__name__)

#: Sent with ``job`` once the job is written and committed; not by ``enqueue_rows``,
#: which makes no job objects, nor for a job a unique key kept out.
job_enqueued = Signal()

#: Sent with ``job`` (its ``status`` ``READY``) once the transaction that released it
#: commits: it waited (``WAITING``) for the jobs it was enqueued ``after``, and the last
#: of them finished (``unblock``). Sent from the process that finished that job (a
#: worker's main thread, a canceller), or the maintenance leader's sweep; and from the
#: enqueuing process for a job whose jobs to wait for had all finished by its enqueue
#: (after its :data:`job_enqueued`). Not :data:`job_enqueued` again: the job was
#: enqueued once, and a receiver counting enqueues counts it once.
job_unblocked = Signal()

#: Sent before a job runs, with ``job``.
job_started = Signal()

#: Sent after a job ran, with ``job``, ``result`` (None on failure), ``error`` (the
#: exception, or None on success), ``outcome`` (``"succeeded"``; ``"retried"`` for a
#: failed attempt with attempts left; ``"cancelled"`` for one stopped on a cancel request;
#: ``"snoozed"`` for one that raised ``Snooze``; else ``"failed"``: ``rules.lifecycle.OUTCOMES``)
#: and ``duration`` (the attempt's seconds, by the worker's monotonic clock). The outcome
#: is written shortly after, in a batch, and may yet be fenced off: :data:`job_ended`'s
#: signals follow what was written.
job_finished = Signal()

#: One signal for each outcome of ``rules.lifecycle.OUTCOMES``, sent with ``job`` (its
#: ``status`` the one written; ``SUCCESSFUL`` for a success ``SQLQUEUE_RETENTION``
#: deleted), ``transition`` (the ``rules.lifecycle.Transition`` made),
#: ``result`` (the return value stored, or None) and ``error`` (the exception the attempt
#: failed with, or None) once the outcome is committed. A transition given an outcome in
#: the state machine gets its signal here.
job_ended: Mapping[str, Signal] = {outcome: Signal() for outcome in OUTCOMES}
#: ``job_ended["succeeded"]``: the job is ``SUCCESSFUL`` (or deleted, by ``SQLQUEUE_RETENTION``).
job_succeeded = job_ended[SUCCEED.outcome]
#: ``job_ended["retried"]``: the attempt failed and the job is ``READY`` for its retry.
job_retried = job_ended[RETRY.outcome]
#: ``job_ended["failed"]``: the job failed for good and is ``FAILED``.
job_failed = job_ended[FAIL.outcome]
#: ``job_ended["cancelled"]``: the job is ``CANCELLED``: it stopped on a cancel request
#: (``stop``); or was cancelled while ``READY`` or ``WAITING`` (``cancel``:
#: ``Job.objects.cancel``, the admin; sent from there); or it waited for a job that
#: failed (``cancel_dependent``, ``error`` the ``DependencyFailed`` saying which; sent
#: from where that job ended, or the sweep); or its worker gave it back unstarted after
#: a cancel request (``release_cancelled``: a stopping worker, the rescue).
job_cancelled = job_ended[STOP.outcome]
#: ``job_ended["snoozed"]``: its task raised ``Snooze``; the job is ``READY`` for later, its attempt not counted.
job_snoozed = job_ended[SNOOZE.outcome]
#: ``job_ended["expired"]``: the job was not started by its ``expires_at`` and is
#: ``CANCELLED`` (``end_reason`` "expired"), by ``Job.objects.expire``, which the
#: maintenance leader runs; sent once per job, from the process that ended it.
job_expired = job_ended[EXPIRE.outcome]


def send(signal: Signal, sender: type[Any], about: object, **named: Any) -> None:
    """Send ``signal``; a receiver's exception is logged, naming ``about`` (made a
    string only then), and the other receivers still get it. With no receiver
    connected, nothing is called: the runner sends two signals around every job."""
    if not signal.receivers:
        return
    for receiver, response in signal.send_robust(sender, **named):
        if isinstance(response, Exception):
            logger.error("Receiver %r of %s raised", receiver, about, exc_info=response)


def send_enqueued(jobs: Sequence[AbstractJob], using: str) -> None:
    """Send :data:`job_enqueued` for each of ``jobs`` once ``using``'s transaction
    commits (at once outside one); nothing is held when nobody listens."""
    send_each(job_enqueued, jobs, using)


def send_each(signal: Signal, jobs: Sequence[AbstractJob], using: str) -> None:
    """Send ``signal`` with each of ``jobs`` once ``using``'s transaction commits (at
    once outside one); nothing is held when nobody listens."""
    if not signal.receivers:
        return

    def sent() -> None:
        for job in jobs:
            send(signal, type(job), job, job=job)

    transaction.on_commit(sent, using=using)


def send_ended(ended: Sequence[Ended], using: str) -> None:
    """Send each written outcome's signal of :data:`job_ended` once ``using``'s
    transaction commits (at once outside one), with the job's ``status`` set to the
    one written."""
    if not any(signal.receivers for signal in job_ended.values()):
        return

    def sent() -> None:
        for outcome in ended:
            job, transition = outcome.job, outcome.transition
            job.status = outcome.status
            signal = job_ended[transition.outcome]
            send(signal, type(job), job, job=job, transition=transition, result=outcome.result, error=outcome.error)

    transaction.on_commit(sent, using=using)


#: The signal of each transition that sends one and has no outcome (those with an
#: outcome send its :data:`job_ended`).
SENT: dict[Transition, Signal] = {ENQUEUE: job_enqueued, ENQUEUE_WAITING: job_enqueued, UNBLOCK: job_unblocked}

#: Why each transition that sends no signal sends none: the decision made for every
#: transition that :func:`signal_of` gives none (a test walks the table).
SILENT: dict[Transition, str] = {
    CLAIM: "the attempt it starts sends job_started in the worker thread that runs it; "
    "a job claimed and given back unstarted never started",
    RELEASE: "the job is READY as before its claim, its attempt not counted: nothing happened to it",
    REQUEST_CANCEL: "the job still runs: its end sends job_cancelled (stop, or release_cancelled)",
    ADMIN_RETRY: "an admin's action, kept in the admin's history (LogEntry): the retried job "
    "sends job_started and its outcome's signal as it runs again",
    ADMIN_RETRY_WAITING: "an admin's action, kept in the admin's history (LogEntry): the job waits again, and "
    "sends job_unblocked when the finish of what it waits for releases it",
    RETRY_DEPENDENT: "part of an admin's Retry, kept in the admin's history with the retried job: the job "
    "waits again, and sends job_unblocked when the finish of what it waits for releases it",
    RUN_NOW: "an admin's action, kept in the admin's history: the job only becomes due sooner",
    REPLACE: "the job is READY as before, with another job's arguments and run time: it sends its signals as it runs",
    **dict.fromkeys(
        ADMIN_EDITS,
        "an admin's action, kept in the admin's history (LogEntry): the job keeps its status, and sends "
        "its signals as it runs",
    ),
    DELETE: "an admin's action, kept in the admin's history (a queryset's delete: Django's "
    "post_delete reaches receivers of the model's)",
    PRUNE: "housekeeping of jobs that sent their signal as they ended; counted by sqlqueue_prune and the leader's log",
}


def signal_of(transition: Transition) -> Signal | None:
    """The signal ``transition`` sends once written: its outcome's (:data:`job_ended`),
    or its own (:data:`SENT`); None for one of :data:`SILENT`."""
    return job_ended[transition.outcome] if transition.outcome else SENT.get(transition)
