"""Batches in SQL: jobs enqueued together (``Job.objects.batch()``) and the callbacks
enqueued, once, when they have all finished.

Exactly once, without timing: a finish that ends jobs of a batch counts its
``pending`` down under the batch row's lock, in the finish's own transaction (so a
finish that lost its fence counts nothing, and a crash rolls the count back with the
finish). The finish that takes it to 0 or below asks whether any job of the batch is
still unfinished (under that lock, so a racing finish has committed, or waits); if
none is, it enqueues the callbacks and sets ``finished_at``, compare-and-set on
``finished_at IS NULL``, still in that transaction. ``pending`` is only a hint that
spares every other finish that question: the unfinished jobs decide.

Every other path that ends jobs (a cancel, the expiry sweep, a workflow's
``cancel_dependent``, a worker giving back a job someone asked to cancel) recounts
their batches in its own transaction (:func:`recount`): under the batch row's lock,
``pending`` becomes the number of the batch's unfinished jobs, and the batch is
completed at 0. A recount needs only the batches, not which jobs this path ended, and
two recounts (or a recount and a finish) in any order leave the true count: a finish
that has not committed is still unfinished to the recount, and counts itself down
after it.

Adding jobs writes them, then locks the batch row (after the jobs' rows, in the order
a finish takes them) and refuses a finished batch, rolling the jobs back; a job added
from inside one of the batch's jobs finds it unfinished, as that job is."""

from __future__ import annotations

import contextvars
import logging
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from django.apps import apps
from django.db import models, transaction
from django.db.models import F, Q

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.exceptions import InvalidJobError, UnknownTaskError
from django_sqlqueue.rules.batches import BATCH_ARGUMENT, CALLBACKS, SUCCEEDED, fires
from django_sqlqueue.rules.lifecycle import ACTIVE, SUCCEED_AND_DELETE
from django_sqlqueue.rules.user_code import runner_enqueues

if TYPE_CHECKING:
    from django_sqlqueue.db.finishing import Ended
    from django_sqlqueue.db.schema.table import AbstractJob

logger = logging.getLogger(__name__)

#: The batch (its id) that jobs built inside ``with Job.objects.batch()`` join.
OPEN: contextvars.ContextVar[int | None] = contextvars.ContextVar("sqlqueue_open_batch", default=None)
#: Open batches a sweep completes at most, each in its own transaction.
SWEEP_LIMIT = 100


def _batch_model() -> type[models.Model]:
    """``models.JobBatch``, from the app registry: the models module imports the
    managers, which import this module."""
    return apps.get_model("django_sqlqueue", "JobBatch")


def _batches(using: str) -> models.QuerySet[Any]:
    return _batch_model()._default_manager.using(using)


def open_batch(using: str, description: str, callbacks: Mapping[str, dict[str, Any]]) -> models.Model:
    """Write a new batch, in the caller's transaction."""
    made: models.Model = _batches(using).create(description=description, callbacks=dict(callbacks))
    return made


def lock_open(using: str, ids: Collection[int]) -> None:
    """Lock the batches ``ids`` (in id order, as finishes do) until the transaction
    ends; raises :class:`InvalidJobError` naming those that do not exist or have
    finished: a job added to a finished batch would never be counted."""
    rows = _batches(using).filter(pk__in=sorted(ids)).select_for_update().order_by("pk")
    found = dict(rows.values_list("pk", "finished_at"))
    if missing := sorted(set(ids) - found.keys()):
        raise InvalidJobError(f"batch= names batches that do not exist: {', '.join(map(str, missing))}.")
    if finished := sorted(pk for pk, at in found.items() if at is not None):
        raise InvalidJobError(
            f"Batch {finished[0]} has finished (its callbacks are enqueued): add jobs to a batch "
            "before its last job finishes, from inside one of its jobs."
        )


def join(using: str, created: Counter[int]) -> None:
    """Count the jobs just written into their batches (``created``: how many a batch
    got), whose rows :func:`lock_open` locked."""
    for pk, count in created.items():
        _batches(using).filter(pk=pk).update(total=F("total") + count, pending=F("pending") + count)


def count_down(model: type[AbstractJob], using: str, ended: Iterable[Ended]) -> None:
    """In a finish's transaction: count the jobs of ``ended`` that have finished (a
    retried or snoozed job has not) off their batches, and complete the batches that
    have no unfinished job left."""
    done: Counter[int] = Counter()
    unkept: Counter[int] = Counter()
    for outcome in ended:
        batch = outcome.job.batch_id
        if batch is not None and outcome.status not in ACTIVE:
            done[batch] += 1
            unkept[batch] += outcome.transition is SUCCEED_AND_DELETE
    if not done:
        return
    rows = _batches(using).filter(pk__in=sorted(done), finished_at=None).select_for_update().order_by("pk")
    for pk, pending in list(rows.values_list("pk", "pending")):
        _batches(using).filter(pk=pk).update(
            pending=F("pending") - done[pk], succeeded_unkept=F("succeeded_unkept") + unkept[pk]
        )
        if pending - done[pk] <= 0:
            complete(model, using, pk)


def recount(model: type[AbstractJob], using: str, ids: Iterable[int | None]) -> None:
    """In the transaction of a path that has just ended jobs of the batches ``ids``
    (None for a job in none) other than by a finish: lock those still open (in id
    order, as finishes do), set each one's ``pending`` to its unfinished jobs, and
    complete those left with none. No query for no batch."""
    pks = sorted({pk for pk in ids if pk is not None})
    if not pks:
        return
    rows = _batches(using).filter(pk__in=pks, finished_at=None).select_for_update().order_by("pk")
    jobs = model._base_manager.using(using).filter(status__in=list(ACTIVE))
    for pk in list(rows.values_list("pk", flat=True)):
        unfinished = jobs.filter(batch_id=pk).count()
        _batches(using).filter(pk=pk).update(pending=unfinished)
        if not unfinished:
            complete(model, using, pk)


def complete(model: type[AbstractJob], using: str, pk: int) -> bool:
    """Finish batch ``pk``, whose row the caller's transaction has locked, if none of
    its jobs is unfinished: count its ends, enqueue its callbacks and set
    ``finished_at`` (compare-and-set). Whether it finished it."""
    jobs = model._base_manager.using(using).filter(batch_id=pk)
    if jobs.filter(status__in=list(ACTIVE)).exists():
        return False
    batch = _batches(using).get(pk=pk)
    if batch.finished_at is not None:
        return False
    ends = dict(jobs.order_by().values_list("status").annotate(models.Count("pk")))
    succeeded = batch.succeeded_unkept + sum(ends.get(status, 0) for status in SUCCEEDED)
    failed = max(batch.total - succeeded, 0)  # a job deleted before it finished counts as failed
    counts = {"id": pk, "description": batch.description, "total": batch.total}
    counts.update(succeeded=succeeded, failed=failed)
    callback_jobs = _enqueue_callbacks(model, using, batch.callbacks, counts)
    return bool(
        _batches(using)
        .filter(pk=pk, finished_at=None)
        .update(finished_at=DatabaseNow(), pending=0, succeeded=succeeded, failed=failed, callback_jobs=callback_jobs)
    )


def _enqueue_callbacks(
    model: type[AbstractJob], using: str, callbacks: Mapping[str, Any], counts: dict[str, Any]
) -> dict[str, int | str]:
    """Enqueue the callbacks a batch with ``counts`` fires, each with ``batch=counts``:
    their ids by callback. One that cannot be enqueued any more (its task was
    unregistered since) is logged and kept as its error, and the others go on: a finish
    must not fail for it. Nor for an enqueue hook that raises on a callback: the
    callback is enqueued without that hook's changes (``rules.user_code.runner_enqueues``)."""
    manager = cast(Any, model._default_manager).db_manager(using)
    made: dict[str, int | str] = {}
    token = OPEN.set(None)  # a callback joins no batch, even enqueued inside one
    try:
        for when in CALLBACKS:
            spec = callbacks.get(when)
            if spec is None or not fires(when, counts["failed"]):
                continue
            kwargs = {**spec["kwargs"], BATCH_ARGUMENT: counts}
            try:  # both raised before anything is written
                with runner_enqueues():
                    made[when] = manager.enqueue(spec["task"], spec["args"], kwargs).pk
            except (UnknownTaskError, InvalidJobError) as error:
                logger.error(
                    "Batch %s finished, but its %s callback could not be enqueued: %s", counts["id"], when, error
                )
                made[when] = f"not enqueued: {error}"
    finally:
        OPEN.reset(token)
    return made


def sweep(model: type[AbstractJob], using: str, *, limit: int = SWEEP_LIMIT) -> int:
    """Complete up to ``limit`` open batches none of whose jobs is unfinished, each in a
    transaction of its own: what the maintenance leader runs. How many it completed.

    The safety net, not the path: every end of a job counts or recounts its batch in
    its own transaction, so what is left here is what none did: jobs deleted before
    they finished (the admin's Delete, rows deleted by hand), or whatever a crash or a
    bug left open."""
    active = model._base_manager.filter(batch_id=models.OuterRef("pk"), status__in=list(ACTIVE))
    stale = _batches(using).filter(finished_at=None).exclude(models.Exists(active)).order_by("pk")
    completed = 0
    for pk in list(stale.values_list("pk", flat=True)[:limit]):
        with transaction.atomic(using=using):
            if _batches(using).filter(pk=pk, finished_at=None).select_for_update().exists():
                completed += complete(model, using, pk)
    return completed


def prunable() -> Q:
    """The jobs pruning may delete as far as batches go: none of an unfinished batch,
    whose count would lose them."""
    unfinished = _batch_model()._default_manager.filter(pk=models.OuterRef("batch_id"), finished_at=None)
    return Q(batch_id=None) | Q(~models.Exists(unfinished))


def batch_id(value: Any) -> int | None:
    """The id of ``value`` (a saved batch or its id; None for none); inside ``with
    Job.objects.batch()`` None is the open batch. Raises :class:`InvalidJobError` for
    anything else."""
    if value is None:
        return OPEN.get()
    if isinstance(value, models.Model) and value.pk is not None:
        value = value.pk
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidJobError(f"batch= must be a saved JobBatch or its id, not {value!r:.100}.")
    return value


def forget_finished(model: type[AbstractJob], using: str, limit: int) -> int:
    """Delete up to ``limit`` finished batches none of whose jobs is left (pruning, once
    it has deleted the due jobs): a batch goes with its last job, never before it. A
    finished batch takes no new job, so one found empty stays empty. How many."""
    left = models.Exists(model._base_manager.filter(batch_id=models.OuterRef("pk")))
    empty = _batches(using).exclude(finished_at=None).exclude(left)
    pks = list(empty.order_by("pk").values_list("pk", flat=True)[:limit])
    if not pks:
        return 0
    deleted, _ = empty.filter(pk__in=pks).delete()
    return deleted
