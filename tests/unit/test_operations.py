"""The operators' controls (``operations.py``), and the package root exporting them
and the names a task uses, the models' lazily: importing ``django_sqlqueue`` must not
import the models."""

from __future__ import annotations

import subprocess
import sys

import pytest

import django_sqlqueue
from django_sqlqueue import exceptions, operations, workflows
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules import registry
from django_sqlqueue.runner import current
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db


def test_the_root_exports_the_operators_controls() -> None:
    assert django_sqlqueue.pause_queue is operations.pause_queue
    assert django_sqlqueue.resume_queue is operations.resume_queue
    assert django_sqlqueue.cancel_jobs is operations.cancel_jobs
    assert django_sqlqueue.queue_stats is operations.queue_stats


def test_the_root_exports_the_names_a_task_uses() -> None:
    from django_sqlqueue import JobCancelled, Snooze, chain, chord, current_job, job

    assert (Snooze, JobCancelled) == (exceptions.Snooze, exceptions.JobCancelled)
    assert (chain, chord) == (workflows.chain, workflows.chord)
    assert (job, current_job) == (registry.job, current.current_job)


def test_an_unknown_name_of_the_root_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'django_sqlqueue' has no attribute 'nope'"):
        django_sqlqueue.nope  # noqa: B018


def test_importing_the_package_does_not_import_the_models() -> None:
    code = "import sys, django_sqlqueue; print('django_sqlqueue.models' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert shown.stdout.strip() == "False"


def test_cancel_jobs_cancels_ready_jobs_and_asks_running_ones_to_stop() -> None:
    ready, running, done = (Job.objects.enqueue(noop) for _ in range(3))
    Job.objects.filter(pk=running.pk).update(status=JobStatus.RUNNING)
    Job.objects.filter(pk=done.pk).update(status=JobStatus.SUCCESSFUL)
    assert operations.cancel_jobs([ready.pk, running.pk, done.pk]) == (1, 1)
    statuses = dict(Job.objects.values_list("pk", "status"))
    assert statuses == {ready.pk: JobStatus.CANCELLED, running.pk: JobStatus.RUNNING, done.pk: JobStatus.SUCCESSFUL}
    assert Job.objects.get(pk=running.pk).cancel_requested_at is not None


def test_queue_stats_show_every_queue_with_its_counts_and_pause() -> None:
    Job.objects.enqueue(noop, queue="mail")
    operations.pause_queue("reports", "month end")
    stats = operations.queue_stats()
    figures = {queue.queue: (queue.counts, queue.paused_reason) for queue in stats.queues}
    assert figures == {"mail": ({JobStatus.READY: 1}, None), "reports": ({}, "month end")}
    assert operations.resume_queue("reports") is True
