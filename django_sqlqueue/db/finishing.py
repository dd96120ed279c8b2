"""Recording the outcomes of a batch of attempts in one UPDATE."""

from __future__ import annotations

import datetime
import json
import math
import random
import traceback
from collections import defaultdict
from collections.abc import Iterable, Mapping
from functools import reduce
from operator import or_
from typing import TYPE_CHECKING, Any, cast

from django.db.models import Case, F, Field, Q, Value, When
from django.db.models.expressions import Combinable

from django_sqlqueue.conf import conf
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.expressions import PrimaryKeyIn
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.status import JobStatus
from django_sqlqueue.validation import json_problem

if TYPE_CHECKING:
    # Type-only: the manager calls this module, and the model holds the manager.
    from django_sqlqueue.managers import JobQuerySet
    from django_sqlqueue.models import Job


def retry_delay(attempt: int) -> datetime.timedelta:
    """How long a job waits after its ``attempt``-th failure: doubling from
    ``SQLQUEUE_RETRY_BACKOFF``, capped at ``SQLQUEUE_RETRY_BACKOFF_MAX``, and spread over
    its upper half so that jobs which failed together do not retry together."""
    cap = conf.SQLQUEUE_RETRY_BACKOFF_MAX
    # Doubling past the cap would overflow a float for a job retried thousands of times.
    doublings = min(attempt - 1, math.ceil(math.log2(cap / conf.SQLQUEUE_RETRY_BACKOFF)))
    ceiling = min(cap, conf.SQLQUEUE_RETRY_BACKOFF * 2**doublings)
    return datetime.timedelta(seconds=random.uniform(ceiling / 2, ceiling))


def error_record(job: Job, error: BaseException, worker_id: str) -> dict[str, Any]:
    """What is kept of a failed attempt; the keys follow Django Tasks' ``TaskError``.

    ``attempt`` numbers the attempt over the job's whole life, not within its current
    ``max_attempts``: an admin Retry starts ``attempts`` from 0 again, but every attempt
    before it that ended without success left one record here."""
    kind = type(error)
    return {
        "attempt": len(job.errors) + 1,
        "worker": worker_id,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "exception_class_path": f"{kind.__module__}.{kind.__qualname__}",
        "message": str(error),
        "traceback": "".join(traceback.format_exception(error)),
    }


def after_failure(job: Job, error: BaseException, worker_id: str, now: Any) -> dict[str, Any]:
    """The columns a failed attempt changes, its error added to the job's: back to
    ``READY`` after :func:`retry_delay` while it has attempts left, else ``FAILED``.

    ``now`` is the database's clock when the outcome is written; the worker's own
    clock only where it tells Django's task signals what is about to be written."""
    errors = [*job.errors, error_record(job, error, worker_id)]
    if job.attempts < job.max_attempts:
        return {"status": JobStatus.READY, "errors": errors, "run_at": now + retry_delay(job.attempts)}
    return {"status": JobStatus.FAILED, "errors": errors, "finished_at": now}


class _Changes:
    """The new value of each changed column, by job id."""

    def __init__(self) -> None:
        self.by_column: dict[str, dict[int, Any]] = defaultdict(dict)

    def set(self, job: Job, **values: Any) -> None:
        for column, value in values.items():
            self.by_column[column][job.pk] = value

    def expression(self, column: str, output_field: Field[Any, Any], rows: int) -> Any:
        """One ``CASE`` over job ids (one value when it is the same for all ``rows``);
        rows without a new value keep theirs."""
        values = self.by_column[column]
        # Grouped by what is written, not by Python equality: True == 1 == 1.0, but
        # they are different JSON. Expressions (the database's clock) group by identity.
        groups: dict[Any, tuple[Any, list[int]]] = {}
        for pk, value in values.items():
            key = id(value) if isinstance(value, Combinable) else json.dumps(value, sort_keys=True, default=repr)
            groups.setdefault(key, (value, []))[1].append(pk)
        if len(groups) == 1 and len(values) == rows:
            return _as_expression(next(iter(groups.values()))[0], output_field)
        whens = [When(PrimaryKeyIn(pks), then=_as_expression(value, output_field)) for value, pks in groups.values()]
        return Case(*whens, default=F(column), output_field=output_field)


def _as_expression(value: Any, output_field: Field[Any, Any]) -> Any:
    return value if isinstance(value, Combinable) else Value(value, output_field=output_field)


def finish(
    jobs: JobQuerySet, *, worker_id: str, succeeded: Mapping[Job, Any], failed: Mapping[Job, BaseException]
) -> int:
    """See :meth:`JobManager.finish`."""
    if both := {job.pk for job in succeeded} & {job.pk for job in failed}:
        raise ValueError(f"Jobs {sorted(both)} cannot both succeed and fail.")
    failures = dict(failed)
    now = DatabaseNow()
    changes = _Changes()
    for job, value in succeeded.items():
        if problem := json_problem(value, "the return value"):
            failures[job] = InvalidJobError(f"{job.task} finished, but {problem}.")
        else:
            changes.set(job, status=JobStatus.SUCCESSFUL, finished_at=now)
            if value is not None:
                changes.set(job, result=value)
    for job, error in failures.items():
        changes.set(job, **after_failure(job, error, worker_id, now))
    # A success whose result was refused is also in failures: count each job once.
    owned = list({job.pk: job for job in (*succeeded, *failures)}.values())
    if not owned:
        return 0
    model = jobs.model
    updates = {
        column: changes.expression(column, cast("Field[Any, Any]", model._meta.get_field(column)), len(owned))
        for column in changes.by_column
    }
    return retry_transient(jobs.db, lambda: still_held(jobs, worker_id, owned).update(**updates), atomic=False)


def release(jobs: JobQuerySet, *, worker_id: str, unstarted: Iterable[Job]) -> int:
    """Give back claimed jobs that never started, without counting their attempt."""
    unstarted = list(unstarted)
    if not unstarted:
        return 0
    targets = still_held(jobs, worker_id, unstarted)
    return retry_transient(
        jobs.db,
        lambda: targets.update(status=JobStatus.READY, attempts=F("attempts") - 1, started_at=None),
        atomic=False,
    )


def still_held(jobs: JobQuerySet, worker_id: str, held: Iterable[Job]) -> JobQuerySet:
    """The rows of ``held`` still ``RUNNING`` for ``worker_id`` at the attempt it claimed.

    This is the fence: a job rescued from this worker, or claimed again, has moved on
    and is not written."""
    by_attempt: dict[int, list[int]] = defaultdict(list)
    for job in held:
        by_attempt[job.attempts].append(job.pk)
    claimed = reduce(or_, (Q(PrimaryKeyIn(pks), attempts=count) for count, pks in by_attempt.items()))
    return jobs.filter(claimed, status=JobStatus.RUNNING, worker=worker_id)
