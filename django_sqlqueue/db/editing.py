"""A person's edit of a job no worker holds (the admin's Edit): what it runs (its
arguments) and how (its queue, priority, run time and attempts), checked as an
enqueue checks them and written as one of the ``admin_edit_*`` transitions.

The edit is made to the job as the person saw it: it is written only while the job
still has the status and the attempt count it had then (a compare-and-set, on the row
locked with ``select_for_update``), so a job a worker claimed meanwhile, or one
retried or cancelled since, is left alone and the edit is refused.

A key derived from the arguments (``@job(unique=...)``, ``@job(concurrency=...)``) is
derived again from the new ones, and a key given to ``enqueue`` is kept: the edited
job is deduplicated and limited as it would be had it been enqueued with them. A new
unique key another job holds refuses the edit (the unique index decides)."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from django_sqlqueue.db.charsets import unstorable
from django_sqlqueue.db.lifecycle import allowed, written
from django_sqlqueue.db.schema.table import JobT
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.rules import keys
from django_sqlqueue.rules.lifecycle import ADMIN_EDITS, Transition
from django_sqlqueue.rules.registry import RegisteredTask, get_task
from django_sqlqueue.rules.validation import arguments_problem, job_options_problem, run_at_problem

#: The transition that edits a job of each status.
EDIT_OF: dict[str, Transition] = {transition.status: transition for transition in ADMIN_EDITS}


@dataclass(frozen=True)
class Edit:
    """What a job runs and how, as the person wants it."""

    args: list[Any]
    kwargs: dict[str, Any]
    queue: str
    priority: int
    run_at: datetime.datetime
    max_attempts: int


def edit_problem(registered: RegisteredTask, edit: Edit) -> str | None:
    """Why ``edit`` cannot be written to a job of ``registered``, or None: the checks of an enqueue."""
    return (
        arguments_problem(edit.args, edit.kwargs)
        or registered.binding_problem(edit.args, edit.kwargs)
        or job_options_problem(queue=edit.queue, priority=edit.priority, max_attempts=edit.max_attempts)
        or run_at_problem(edit.run_at, use_tz=settings.USE_TZ)
    )


def edit_job(model: type[JobT], using: str, seen: JobT, edit: Edit) -> JobT | None:
    """Write ``edit`` to the job ``seen`` (as read by the person: its ``pk``, ``status``
    and ``attempts``) if it still has that status and attempt count and its status is
    one of ``rules.lifecycle.EDITABLE``: the job as it was before the edit, or None when
    it has changed since or cannot be edited. Raises ``InvalidJobError`` (nothing
    written) for an edit an enqueue would refuse, or a unique key another job holds."""
    transition = EDIT_OF.get(seen.status)
    if transition is None:
        return None
    registered = get_task(seen.task)
    if problem := edit_problem(registered, edit):
        raise InvalidJobError(f"Cannot edit job {seen.pk}: {problem}.")
    rows = model._base_manager.using(using).filter(allowed(transition))
    with transaction.atomic(using=using):
        before = rows.select_for_update().filter(pk=seen.pk, attempts=seen.attempts).first()
        if before is None:
            return None
        values = _values(registered, before, edit)
        texts = {name: values[name] for name in ("queue", "unique_key", "concurrency_key")}
        if problem := unstorable(model, using, texts):
            raise InvalidJobError(f"Cannot edit job {seen.pk}: {problem}.")
        try:
            with transaction.atomic(using=using):
                rows.filter(pk=seen.pk, attempts=seen.attempts).update(**written(transition, **values))
        except IntegrityError:
            raise InvalidJobError(
                f"Cannot edit job {seen.pk}: another job holds the unique key {values['unique_key']!r} its new "
                "arguments make."
            ) from None
    return before


def _values(registered: RegisteredTask, before: Any, edit: Edit) -> dict[str, Any]:
    """The columns an edit writes: ``edit``'s, and the keys derived again."""
    values = {field.name: getattr(edit, field.name) for field in fields(edit)}

    def unique_key(job: Any) -> str | None:
        return keys.unique_key(registered, job.args, job.kwargs, job.queue)

    def concurrency_key(job: Any) -> str | None:
        return keys.concurrency_slot(registered, job.args, job.kwargs, key=None, limit=before.concurrency_limit)[0]

    values["unique_key"] = _rederived(before.unique_key, unique_key, before, edit)
    values["concurrency_key"] = _rederived(before.concurrency_key, concurrency_key, before, edit)
    return values


def _rederived(key: str | None, derive: Callable[[Any], str | None], before: Any, edit: Edit) -> str | None:
    """``key`` derived from ``edit`` if it was derived from the job ``before`` it, else ``key`` as it is."""
    if key is None:
        return None
    try:
        derived = derive(before) == key
    except InvalidJobError:  # the old arguments no longer fit: a key given to enqueue
        derived = False
    return derive(edit) if derived else key
