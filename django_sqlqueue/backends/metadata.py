"""Django's task metadata (in its development version: ``Task.using(metadata=...)``,
``TaskResult.metadata``, ``TaskContext.metadata`` and ``save_metadata()``) as a job's
``meta``: the whole dict, its keys starting with ``_`` (hidden from the task and its
results, reserved for backends and libraries; this backend reserves ``_sqlqueue`` and
writes none today) too. Feature-detected: where Django has no
metadata, results and contexts carry none, and ``with_meta()`` still writes ``meta``."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db import transaction

from django_sqlqueue.backends.compat import TaskContext, TaskResult, TaskResultDoesNotExist
from django_sqlqueue.rules.validation import meta_problem
from django_sqlqueue.runner.current import current_job

#: Whether the installed Django's ``TaskResult`` carries metadata (``raw_metadata``).
SUPPORTED = "raw_metadata" in {field.name for field in dataclasses.fields(TaskResult)}


def enqueue_meta(task: Any) -> dict[str, Any] | None:
    """The ``meta`` an enqueue of ``task`` writes: ``with_meta()``'s, then Django's
    ``metadata`` over it; None for neither."""
    meta = {**(getattr(task, "meta", None) or {}), **(getattr(task, "metadata", None) or {})}
    return meta or None


def result_metadata(meta: dict[str, Any] | None) -> dict[str, Any]:
    """The ``TaskResult`` arguments that carry a job's ``meta``: none where Django has no metadata."""
    return {"raw_metadata": dict(meta or {})} if SUPPORTED else {}


def save_modified(context: TaskContext[..., Any]) -> None:
    """Save the metadata ``context``'s task changed, whether it returned or raised, as
    Django's own backends do; nothing where Django has no metadata."""
    if getattr(context, "metadata_modified", False):
        context.save_metadata()  # type: ignore[attr-defined]


def save_meta(result_id: str, metadata: dict[str, Any]) -> None:
    """Make ``metadata`` the ``meta`` of the job ``result_id``: inside the running job's
    task, fenced like every write of its worker (``JobHandle.replace_meta``); elsewhere,
    by id. Raises ``ValueError`` for what no database stores as itself, and
    ``TaskResultDoesNotExist`` for no such job."""
    handle = current_job()
    if handle is not None and str(handle.id) == str(result_id):
        handle.replace_meta(metadata)
        return
    if problem := meta_problem(metadata):
        raise ValueError(f"{problem}.")
    from django_sqlqueue.models import Job

    jobs = Job.objects.on_queue_db().filter(pk=int(result_id)) if str(result_id).isdigit() else Job.objects.none()
    with transaction.atomic(using=jobs.db):
        if not jobs.update(meta=metadata):
            raise TaskResultDoesNotExist(result_id)
