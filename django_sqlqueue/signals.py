"""Signals a worker sends around each job, for hooks of your own (metrics, logging).

Receivers run in the worker, in the thread that runs the job, outside any transaction.
An exception in a receiver is logged and changes nothing about the job."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent before a job runs, with ``job``.
job_started = Signal()

#: Sent after a job ran, with ``job``, ``result`` (None on failure), ``error`` (the
#: exception, or None on success), ``outcome`` (``"succeeded"``; ``"retried"`` for a
#: failed attempt with attempts left; ``"cancelled"`` for one stopped on a cancel request;
#: ``"snoozed"`` for one that raised ``Snooze``; else ``"failed"``: ``rules.lifecycle.OUTCOMES``)
#: and ``duration`` (the attempt's seconds, by the worker's monotonic clock). The outcome
#: is written shortly after, in a batch.
job_finished = Signal()
