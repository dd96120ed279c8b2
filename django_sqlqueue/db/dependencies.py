"""Workflows in SQL: a job enqueued ``after=`` others waits (``WAITING``) until they have
all finished, linked to each by a ``JobDependency`` row.

Exactly once, without timing: each link is settled once, under its row lock (``settled``
moves from False to True), by its parent's finisher in the finish's transaction, or in
the transaction that cancels its parent. What waits is looked for after the fenced
UPDATE, so that a child linked while the finish waited for the parent's row lock is
seen; a parent that had nothing waiting for it as its finish began is finished without a
transaction, and such a child is settled right after (:func:`settle_finished`), unless
the finish deletes successes (``SQLQUEUE_RETENTION["SUCCESSFUL"]`` 0): their ``DELETE``
and the settling of their links are always one transaction, whatever the finish looked
for before, and ``job_succeeded``'s receivers run once it commits. So no link is ever
left unsettled, for anyone to read, to a job that succeeded and is gone: the sweep takes
a missing parent for one deleted before it finished (an admin's delete, a project's own
``DELETE``) and cancels what waits for it, and with two hosts it either sees the
parent's row (its delete not committed) or its links settled (committed with it). The
settling takes the settled links off their children's ``waiting_for`` (an ``UPDATE``
under the child's row lock, so two parents finishing at once on two connections count
down one after the other), then releases the children left at 0 (``unblock``) or cancels
those a failed parent stops (``cancel_dependent``), both compare-and-set on ``status =
WAITING``; a child cancelled recounts its batch (``batches.recount``). A finish that
lost its fence leaves its job unfinished, so it settles nothing; a crash rolls the
finish and its settling back whole, and the maintenance sweep settles what a crash right
after a finish without a transaction left.

Enqueueing ``after=`` locks the parents' rows (in id order) and reads their statuses:
a missing parent refuses the enqueue, an unfinished one is counted, a finished one's
link is written settled. A parent's finish and a child's enqueue thus see each other
whole, whichever commits first."""

from __future__ import annotations

import itertools
import logging
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.db import DatabaseError, connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F

from django_sqlqueue import signals
from django_sqlqueue.db import batches
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.engines import engine, engine_for
from django_sqlqueue.db.finishing import Ended
from django_sqlqueue.db.lifecycle import DEPENDENCY_FAILED, allowed, written
from django_sqlqueue.db.wakeup import wake_on_commit, wakeup_folder
from django_sqlqueue.exceptions import DependencyFailed, InvalidJobError
from django_sqlqueue.rules.dependencies import blocked_reason, parent_id_problem
from django_sqlqueue.rules.lifecycle import (
    ACTIVE,
    CANCEL,
    CANCEL_DEPENDENT,
    ENQUEUE,
    ENQUEUE_WAITING,
    UNBLOCK,
    JobStatus,
)

if TYPE_CHECKING:
    from django_sqlqueue.db.schema.table import AbstractJob

logger = logging.getLogger(__name__)

#: Ids in one ``IN (...)``: well under SQLite's limit on a statement's parameters.
CHUNK = 500


def _link_model() -> type[models.Model]:
    """The links' model (``models.JobDependency``), from the app registry: the models
    module imports the managers, which import this module, so it cannot import (nor name)
    the models back."""
    return apps.get_model("django_sqlqueue", "JobDependency")


def link_rows(using: str) -> models.QuerySet[Any]:
    """The links (``JobDependency`` rows) of the database ``using``."""
    return _link_model()._default_manager.using(using)


def chunks(ids: Iterable[int]) -> Iterator[list[int]]:
    """``ids``, each once and in order, in lists of up to :data:`CHUNK`."""
    iterator = iter(sorted(set(ids)))
    while chunk := list(itertools.islice(iterator, CHUNK)):
        yield chunk


def parent_ids(after: Iterable[Any], using: str) -> tuple[int, ...]:
    """The ids of ``after`` (saved jobs of the database ``using`` or ids), each once.
    Raises :class:`InvalidJobError` for anything else: an unsaved job, one read from
    another database, a value that is no id."""
    ids: dict[int, None] = {}
    for parent in after:
        if isinstance(parent, models.Model):
            if parent.pk is None:
                raise InvalidJobError(f"after= holds an unsaved job ({parent}): enqueue it first.")
            if parent._state.db not in (None, using):
                raise InvalidJobError(
                    f"after= holds job {parent.pk} of the database {parent._state.db!r}; "
                    f"this job is written to {using!r}: a job can only wait for jobs of its own database."
                )
            parent = parent.pk
        if problem := parent_id_problem(parent):
            raise InvalidJobError(f"after= {problem}.")
        ids[parent] = None
    return tuple(ids)


def lock_parents(model: type[AbstractJob], using: str, ids: Collection[int]) -> dict[int, str]:
    """The status of each job of ``ids``, its row locked until the transaction ends (in
    id order, as finishes lock theirs). Raises :class:`InvalidJobError` naming the ids
    no job has (never enqueued, or deleted): nothing waits for a job that cannot finish."""
    statuses: dict[int, str] = {}
    for chunk in chunks(ids):
        rows = model._base_manager.using(using).filter(pk__in=chunk).select_for_update().order_by("pk")
        statuses.update(rows.values_list("pk", "status"))
    if missing := sorted(set(ids) - statuses.keys()):
        shown = ", ".join(map(str, missing[:10])) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise InvalidJobError(f"after= names jobs that do not exist (never enqueued, or deleted): {shown}.")
    return statuses


def link(model: type[AbstractJob], using: str, children: Sequence[AbstractJob], statuses: dict[int, str]) -> None:
    """Make ``children`` (just written ``READY`` in this transaction, each with its
    ``after`` ids among ``statuses``) wait: ``WAITING`` with their count of unfinished
    parents (``enqueue_waiting``), a link to each parent (settled for a finished one);
    then those with none unfinished are decided at once, as a finish would."""
    link_model = _link_model()
    groups: dict[tuple[int, bool], list[int]] = defaultdict(list)
    rows: list[models.Model] = []
    for child in children:
        unfinished = sum(statuses[parent] in ACTIVE for parent in child.after)
        groups[unfinished, child.runs_after_failure].append(child.pk)
        child.status, child.waiting_for = ENQUEUE_WAITING.status, unfinished
        rows.extend(
            link_model(child_id=child.pk, parent_id=parent, settled=statuses[parent] not in ACTIVE)
            for parent in child.after
        )
    jobs = model._base_manager.using(using)
    for (unfinished, runs), pks in groups.items():
        # The rows were inserted as ``enqueue`` (READY) in this transaction: this makes them ``enqueue_waiting``.
        inserted = jobs.filter(pk__in=pks, status=ENQUEUE.target)
        inserted.update(**written(ENQUEUE_WAITING, over=ENQUEUE, waiting_for=unfinished, runs_after_failure=runs))
    link_rows(using).bulk_create(rows, batch_size=CHUNK)
    unsettled_here(using)
    blocked = {
        child.pk: blocked_reason({parent: statuses[parent] for parent in child.after})
        for child in children
        if not child.runs_after_failure
    }
    cancelled = _decide(model, using, [child.pk for child in children], {pk: why for pk, why in blocked.items() if why})
    for child in children:
        if child.pk in cancelled:
            child.refresh_from_db(fields=["status", "finished_at", "errors", "last_error_class"])
        elif child.waiting_for == 0:
            child.status = JobStatus.READY


def settle(
    model: type[AbstractJob], using: str, finished: Iterable[int], *, gone_succeeded: Collection[int] = ()
) -> None:
    """Settle the unsettled links of the jobs of ``finished`` that have indeed finished
    (a retried job is ``READY`` again, a rescued one is not ours: their links wait), in
    the caller's transaction, then decide their children; cancelling a child settles
    its own links in turn. ``gone_succeeded`` are jobs this transaction deleted on
    success (``SQLQUEUE_RETENTION["SUCCESSFUL"]`` 0); any other missing job was
    deleted before it finished, and stops its children like a failure."""
    pending = sorted(set(finished))
    while pending:
        cancelled: list[int] = []
        for chunk in chunks(pending):
            cancelled += _settle_chunk(model, using, chunk, gone_succeeded)
        pending = cancelled


def settle_cancelled(model: type[AbstractJob], using: str, jobs: models.QuerySet[Any]) -> None:
    """After a cancel's ``UPDATE`` of ``jobs`` (a queryset), in its transaction: recount
    the batches of those ``CANCELLED`` (``batches.recount``), then settle those something
    waits for. Both are found by one read of ``jobs``, as the links alone were before
    batches: jobs in no batch that nothing waits for cost nothing more."""
    found = jobs.annotate(waited=waited_for()).filter(
        models.Q(waited=True) | models.Q(status=CANCEL.status, batch_id__isnull=False)
    )
    rows = list(found.order_by().values_list("pk", "batch_id", "waited"))
    batches.recount(model, using, (batch for _, batch, waited in rows))
    settle(model, using, [pk for pk, _, waited in rows if waited])


def settle_finished(model: type[AbstractJob], using: str, finished: Collection[AbstractJob]) -> None:
    """After a finish wrote ``finished`` (the jobs its fence let through): :func:`settle`
    those something waits for, in a transaction of its own. Looked for after the
    finish's UPDATE, not before: a job enqueued after one of them while the finish waited
    for its row lock is linked by then (its enqueue held that lock), and one enqueued
    later finds its parent finished. A job nothing waits for costs one indexed read, as
    before. A database error here is logged, not raised: the outcomes are written, and
    the maintenance sweep settles what is left within seconds: the finished rows are
    still there (a finish that deletes successes never comes here), so it reads their
    outcomes as they are."""
    if not (parents := awaited(using, finished)):
        return
    try:
        with transaction.atomic(using=using):
            settle(model, using, parents)
    except DatabaseError as error:
        logger.warning("Settling what waits for jobs %s failed (%s): the sweep settles it", parents[:10], error)


def _settle_chunk(
    model: type[AbstractJob], using: str, parents: list[int], gone_succeeded: Collection[int]
) -> list[int]:
    """:func:`settle` for up to :data:`CHUNK` parents: the children it cancelled."""
    links = list(
        link_rows(using)
        .filter(parent_id__in=parents, settled=False)
        .select_for_update()
        .order_by("pk")
        .values_list("pk", "child_id", "parent_id")
    )
    if not links:  # the jobs without dependents: this one indexed read is all they cost
        return []
    jobs = model._base_manager.using(using)
    statuses = dict(jobs.filter(pk__in={parent for _, _, parent in links}).values_list("pk", "status"))
    for gone in {parent for _, _, parent in links} - statuses.keys():
        statuses[gone] = JobStatus.SUCCESSFUL if gone in gone_succeeded else ""
    done = [(pk, child, parent) for pk, child, parent in links if statuses[parent] not in ACTIVE]
    if not done:
        return []
    link_rows(using).filter(pk__in=[pk for pk, _, _ in done]).update(settled=True)
    counts: dict[int, int] = defaultdict(int)
    finished_parents: dict[int, dict[int, str]] = defaultdict(dict)
    for _, child, parent in done:
        counts[child] += 1
        finished_parents[child][parent] = statuses[parent]
    by_count: dict[int, list[int]] = defaultdict(list)
    for child, count in counts.items():
        by_count[count].append(child)
    found = 0
    for count, children in by_count.items():
        for chunk in chunks(children):
            found += jobs.filter(pk__in=chunk).update(waiting_for=F("waiting_for") - count)
    if found < len(counts):  # children deleted while they waited (not by the admin, which forgets their links)
        kept = {pk for chunk in chunks(counts) for pk in jobs.filter(pk__in=chunk).values_list("pk", flat=True)}
        forget(using, set(counts) - kept)
    blocked = {child: why for child, parents in finished_parents.items() if (why := blocked_reason(parents))}
    return _decide(model, using, sorted(counts), blocked)


def _decide(model: type[AbstractJob], using: str, children: Sequence[int], blocked: dict[int, str]) -> list[int]:
    """Cancel the waiting children of ``blocked`` that do not run after a failure, with
    its reason (``cancel_dependent``); release the others of ``children`` that wait for
    nothing more (``unblock``). Both compare-and-set on ``WAITING``; each job moved sends
    its signal once this commits (``job_cancelled``, ``job_unblocked``): with a receiver
    connected, the rows are read (and locked) first and moved by id. The batches of the
    cancelled are recounted (``batches.recount``). The cancelled ids."""
    jobs = model._base_manager.using(using)
    cancelled: dict[int, str] = {}
    stopped_batches: list[int | None] = []
    reasons: dict[str, list[int]] = defaultdict(list)
    for child, why in blocked.items():
        reasons[why].append(child)
    for why, pks in reasons.items():
        error = {"attempt": 1, "worker": "", "started_at": None, "exception_class_path": DEPENDENCY_FAILED}
        error.update(message=why, traceback="")
        for chunk in chunks(pks):
            stoppable = jobs.filter(pk__in=chunk, runs_after_failure=False).filter(allowed(CANCEL_DEPENDENT))
            locked = dict(stoppable.select_for_update().values_list("pk", "batch_id"))
            ids = list(locked)
            stoppable.filter(pk__in=ids).update(
                **written(
                    CANCEL_DEPENDENT,
                    errors=[error],
                    last_error_class=error["exception_class_path"],
                    finished_at=DatabaseNow(),
                )
            )
            cancelled.update(dict.fromkeys(ids, why))
            stopped_batches += locked.values()
    batches.recount(model, using, stopped_batches)
    if cancelled and signals.job_ended[CANCEL_DEPENDENT.outcome].receivers:
        stopped = itertools.chain.from_iterable(jobs.filter(pk__in=chunk) for chunk in chunks(cancelled))
        ended = [Ended(job, CANCEL_DEPENDENT, error=DependencyFailed(cancelled[job.pk])) for job in stopped]
        signals.send_ended(ended, using)
    released = False
    queues: set[str] = set()
    # Only a datagram names the queues: a NOTIFY (or no wake-up at all) spares their read.
    named = wakeup_folder(using) is not None
    unblocked: list[AbstractJob] = []
    for chunk in chunks(set(children) - cancelled.keys()):
        waiting = jobs.filter(pk__in=chunk).filter(allowed(UNBLOCK))
        if signals.job_unblocked.receivers:
            found = list(waiting.select_for_update())
            waiting = waiting.filter(pk__in=[job.pk for job in found])
            unblocked += found
        if waiting.update(**written(UNBLOCK)):
            released = True
            if named:
                queues.update(jobs.filter(pk__in=chunk, status=UNBLOCK.target).values_list("queue", flat=True))
    for job in unblocked:
        job.status = UNBLOCK.status
    signals.send_each(signals.job_unblocked, unblocked, using)
    if released:  # idle workers wake when this commits, as for new jobs
        engine_for(using).notify("")
        wake_on_commit(using, queues)
    return list(cancelled)


def awaited(using: str, jobs: Collection[AbstractJob]) -> list[int]:
    """The ids among ``jobs`` (saved jobs: a finished batch) that some job still waits
    for (unsettled links): few, however many ``jobs`` holds; read from the links' index
    on their parent, and no query at all for no jobs. The statements are written once
    per connection (:class:`_AwaitedRead`), and the jobs' ids are read only when some
    link is unsettled at all: a finish compiles nothing for it, and with no workflow
    under way touches no job's id."""
    if not jobs:
        return []
    read = engine(connections[using]).made(_AwaitedRead, _link_model())
    if not read.any_unsettled():
        return []
    return [pk for chunk in chunks(job.pk for job in jobs) for pk in read.run(chunk)]


def none_unsettled_lately(using: str) -> bool:
    """Whether the last look of this connection (:func:`awaited`) found no link
    unsettled at all, so that jobs just claimed most likely have nothing waiting for
    them: a finish then goes without its look before the ``UPDATE``, and
    :func:`settle_finished`'s look after it settles what waits all the same, in a
    transaction of its own. With no workflow under way, a finish reads once, not twice;
    once one is, every finish looks first again, and settles in its own transaction.
    False before the first look."""
    return engine(connections[using]).made(_AwaitedRead, _link_model()).seen_unsettled is False


def unsettled_here(using: str) -> None:
    """Tell :func:`none_unsettled_lately` that this connection has just left links
    unsettled (it linked jobs, or made them wait again): this process's next finish
    looks before its ``UPDATE``, and settles in its own transaction."""
    engine(connections[using]).made(_AwaitedRead, _link_model()).seen_unsettled = True


class _AwaitedRead:
    """``SELECT DISTINCT parent_id FROM links WHERE settled = false AND parent_id IN (…)``
    as plain SQL, its names quoted once for each connection; first, without parameters,
    whether any link is unsettled at all (:meth:`any_unsettled`): with no workflow under
    way (most finishes of most projects) that is all a finish reads, in about a bare
    round trip."""

    def __init__(self, model: type[models.Model], connection: BaseDatabaseWrapper) -> None:
        qn = connection.ops.quote_name
        # A concrete field has a column: the stubs type it optional for the others.
        columns = {field.name: qn(str(field.column)) for field in model._meta.concrete_fields}
        parent, settled = columns["parent"], columns["settled"]
        table = qn(model._meta.db_table)
        self._connection = connection
        #: What the last :meth:`any_unsettled` found; None before it was asked.
        self.seen_unsettled: bool | None = None
        self._any = f"SELECT 1 FROM {table} WHERE {settled} = %s LIMIT 1"
        self._head = f"SELECT DISTINCT {parent} FROM {table} WHERE {settled} = %s AND {parent} IN "

    def any_unsettled(self) -> bool:
        """Whether any link at all is unsettled."""
        with self._connection.cursor() as cursor:
            cursor.execute(self._any, [False])
            self.seen_unsettled = cursor.fetchone() is not None
        return self.seen_unsettled

    def run(self, ids: Sequence[int]) -> list[int]:
        """The ids among ``ids`` that an unsettled link waits for."""
        with self._connection.cursor() as cursor:
            cursor.execute(f"{self._head}({', '.join(['%s'] * len(ids))})", [False, *ids])
            return [int(row[0]) for row in cursor.fetchall()]


#: Each connection's :class:`_AwaitedRead`.


def waited_for() -> models.Exists:
    """The jobs something still waits for (an unsettled link to them): pruning leaves
    them to the sweep, which settles them first."""
    return models.Exists(_link_model()._default_manager.filter(parent_id=models.OuterRef("pk"), settled=False))


def forget(using: str, children: Collection[int]) -> None:
    """Delete the links of deleted jobs ``children``, in the transaction that deleted them
    (pruning, the admin's delete) or in the one that settles their parent's end (a job
    deleted otherwise while it waited), so that no link outlives its child."""
    for chunk in chunks(children):
        link_rows(using).filter(child_id__in=chunk).delete()


def sweep(model: type[AbstractJob], using: str, *, limit: int = CHUNK) -> int:
    """Settle up to ``limit`` parents whose links are unsettled though they have finished
    or are gone (a job deleted while others waited for it, or finished by a path that
    does not settle), each batch in a transaction of its own: what the maintenance
    leader runs. How many parents it settled. A gone parent stops its children as a
    failure would: one that succeeded and was deleted for it never leaves a link
    unsettled (its finish settles them in the DELETE's transaction)."""
    active = model._base_manager.using(using).filter(pk=models.OuterRef("parent_id"), status__in=list(ACTIVE))
    stale = (
        link_rows(using)
        .filter(settled=False)
        .exclude(models.Exists(active))
        .order_by("parent_id")
        .values_list("parent_id", flat=True)
        .distinct()[:limit]
    )
    with transaction.atomic(using=using):
        parents = list(stale)
        settle(model, using, parents)
    return len(parents)


def results(model: type[AbstractJob], using: str, child: int) -> dict[str, Any]:
    """What each job ``child`` waits for returned, by its id as a string, in the order
    ``after=`` named them (None for a job that returned nothing, failed, or is no longer
    kept). String keys, as JSON has: the dict is a job's result as it is, and reads
    back equal."""
    parents = list(link_rows(using).filter(child_id=child).order_by("pk").values_list("parent_id", flat=True))
    found: dict[int, Any] = dict.fromkeys(parents)
    for chunk in chunks(parents):
        found.update(model._base_manager.using(using).filter(pk__in=chunk).values_list("pk", "result"))
    return {str(parent): result for parent, result in found.items()}
