"""Recording the outcomes of a batch of attempts in one UPDATE; one job at a time
when the database refuses the batch's data, so that one job's unstorable outcome
is that job's failed attempt and never its neighbours'."""

from __future__ import annotations

import datetime
import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Case, F, Field, Value, When
from django.db.models.expressions import Combinable

from django_sqlqueue.conf import conf
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.engines.errors import is_unavailable, is_unwritable
from django_sqlqueue.db.expressions import HeldBy, PrimaryKeyIn
from django_sqlqueue.db.lifecycle import written, written_case
from django_sqlqueue.db.transient import retry_transient
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.rules.failures import Failure, decide
from django_sqlqueue.rules.lifecycle import (
    AFTER_RELEASE,
    FAIL_UNRECORDED,
    FINISHED,
    SUCCEED,
    SUCCEED_AND_DELETE,
    JobStatus,
    Transition,
)
from django_sqlqueue.rules.validation import json_problem

if TYPE_CHECKING:
    from django.db.models import QuerySet

    # The table, not the model: the model holds the manager, which calls this module.
    from django_sqlqueue.db.schema.table import AbstractJob, JobT

logger = logging.getLogger(__name__)


def after_failure(job: AbstractJob, failure: Failure, now: Any) -> dict[str, Any]:
    """The columns ``failure`` changes (its transition's), its error added to the job's
    (and its class to ``last_error_class``); a snooze gives its attempt back.

    ``now`` is the database's clock when the outcome is written; the worker's own
    clock only where it tells Django's task signals what is about to be written."""
    transition, record = failure.transition, failure.record
    values = _times(transition, now, failure.delay)
    if record is not None:
        # The column holds what fits of the path: a class nested deep enough to pass 255
        # characters is grouped by its start, and its full path stays in the record.
        values.update(errors=[*job.errors, record], last_error_class=record["exception_class_path"][:255])
    if "snoozes" in transition.writes:
        # Fenced on the attempt it claimed: the attempt it gives back is that one.
        values.update(attempts=job.attempts - 1, snoozes=job.snoozes + 1)
    return written(transition, **values)


def _times(transition: Transition, now: Any, delay: datetime.timedelta | None) -> dict[str, Any]:
    """The times ``transition`` writes: ``finished_at`` is ``now``; ``run_at`` is ``delay`` later."""
    times = {"finished_at": now, "run_at": None if delay is None else now + delay}
    return {column: times[column] for column in transition.writes if column in times}


class _Changes:
    """The new value of each changed column, by job id."""

    def __init__(self, outcomes: Mapping[AbstractJob, Mapping[str, Any]]) -> None:
        self.by_column: dict[str, dict[int, Any]] = defaultdict(dict)
        for job, values in outcomes.items():
            pk = job.pk
            for column, value in values.items():
                self.by_column[column][pk] = value

    def expression(self, column: str, output_field: Field[Any, Any], rows: int) -> Any:
        """One ``CASE`` over job ids (one value when it is the same for all ``rows``);
        rows without a new value keep theirs."""
        values = self.by_column[column]
        groups: dict[Any, tuple[Any, list[int]]] = {}
        for pk, value in values.items():
            groups.setdefault(_written_as(value), (value, []))[1].append(pk)
        if len(groups) == 1 and len(values) == rows:
            return _as_expression(next(iter(groups.values()))[0], output_field)
        whens = [When(PrimaryKeyIn(pks), then=_as_expression(value, output_field)) for value, pks in groups.values()]
        return Case(*whens, default=F(column), output_field=output_field)


def _written_as(value: Any) -> Any:
    """A key equal for values written the same, not for values Python calls equal:
    True == 1 == 1.0, but they are different JSON. Expressions (the database's clock)
    are keyed by identity; statuses, strings and whole numbers by type and value,
    without ``json.dumps`` for each of a batch's jobs."""
    if isinstance(value, Combinable):
        return id(value)
    if isinstance(value, str):  # a JobStatus among them
        return (str, value)
    if value is None or type(value) in (int, bool):  # not float: -0.0 == 0.0
        return (type(value), value)
    return json.dumps(value, sort_keys=True, default=repr)


def _as_expression(value: Any, output_field: Field[Any, Any]) -> Any:
    """``value`` as SQL; None as SQL's NULL, which a JSON field would otherwise write as
    JSON's ``null`` (a success that returned None stores no result)."""
    if value is None:
        return Value(None)
    return value if isinstance(value, Combinable) else Value(value, output_field=output_field)


class Ended(NamedTuple):
    """An attempt's outcome as it was written: the job, the transition it made, the
    return value stored (or None) and the exception the attempt failed with (or None)."""

    job: AbstractJob
    transition: Transition
    result: Any = None
    error: BaseException | None = None

    @property
    def status(self) -> JobStatus:
        """The status written: ``SUCCESSFUL`` for a success ``SQLQUEUE_RETENTION`` deleted."""
        return SUCCEED.status if self.transition is SUCCEED_AND_DELETE else self.transition.status


def finish(
    jobs: QuerySet[AbstractJob],
    *,
    worker_id: str,
    succeeded: Mapping[JobT, Any],
    failed: Mapping[JobT, Failure],
) -> list[Ended]:
    """Write the outcomes of claimed jobs, each failure (or snooze) as it was decided
    (:func:`decide`): what :meth:`JobManager.finish` does. What each job written became
    (a job the fence kept out is not among them)."""
    if failed and (both := {job.pk for job in succeeded} & {job.pk for job in failed}):
        raise ValueError(f"Jobs {sorted(both)} cannot both succeed and fail.")
    now = DatabaseNow()
    outcomes: dict[AbstractJob, dict[str, Any]] = {}
    #: What each of ``outcomes`` is meant to become, in the same order: a list, as a
    #: model instance is slow for a dict to hash, each time.
    meant: list[Ended] = []
    for job, value in succeeded.items():
        if problem := json_problem(value, "the return value"):
            invalid = InvalidJobError(f"{job.task} finished, but {problem}.")
            refused = decide(job, invalid, worker_id)
            outcomes[job] = after_failure(job, refused, now)
            meant.append(Ended(job, refused.transition, error=invalid))
        else:
            outcomes[job] = written(SUCCEED, finished_at=now, result=value)
            meant.append(Ended(job, SUCCEED, result=value))
    for job, failure in failed.items():
        outcomes[job] = after_failure(job, failure, now)
        meant.append(Ended(job, failure.transition, error=failure.error))
    done: list[Ended] = []
    if deletes_successes():
        fenced = _delete_successes(jobs, worker_id, outcomes)
        successes = [ended for ended in meant if ended.transition is SUCCEED]
        done += [ended._replace(transition=SUCCEED_AND_DELETE) for ended in successes if ended.job.pk not in fenced]
        meant = [ended for ended in meant if ended.transition is not SUCCEED]
    if not outcomes:
        return done
    try:
        count = _write(jobs, worker_id, outcomes)
    except _Refused as refused:
        logger.warning(
            "The database refused the outcomes of %d jobs (%s): writing them one job at a time",
            len(outcomes),
            refused.error,
        )
    else:
        if count == len(outcomes):
            return done + meant
        fenced = _fenced(jobs, worker_id, outcomes)
        return done + [ended for ended in meant if ended.job.pk not in fenced]
    for ended in meant:
        if alone := _write_alone(jobs, worker_id, outcomes[ended.job], now, ended):
            done.append(alone)
    return done


def deletes_successes() -> bool:
    """Whether a success deletes its job (``SQLQUEUE_RETENTION["SUCCESSFUL"]`` 0) rather
    than writing it ``SUCCESSFUL``."""
    return conf.SQLQUEUE_RETENTION[JobStatus.SUCCESSFUL] == datetime.timedelta(0)


def _fenced(jobs: QuerySet[AbstractJob], worker_id: str, outcomes: Mapping[AbstractJob, Mapping[str, Any]]) -> set[int]:
    """The ids of the jobs of ``outcomes`` that the fence kept an UPDATE that wrote fewer
    than all of them from (jobs rescued or claimed again meanwhile, which is rare): the
    rows are read back, and a row is ours when it holds the worker, and the status, the
    attempts, the snoozes and the last error class we wrote (a rescue writes
    ``WorkerLost``'s)."""
    ours = {
        job.pk: [outcome.get(column, getattr(job, column)) for column in _READ_BACK]
        for job, outcome in outcomes.items()
    }
    rows = jobs.filter(PrimaryKeyIn(ours), worker=worker_id).values_list("pk", *_READ_BACK)
    return set(ours) - {pk for pk, *row in rows if ours[pk] == row}


#: The columns a row read back is compared on: it is ours when it holds what we wrote.
_READ_BACK = ("status", "attempts", "snoozes", "last_error_class")


def _delete_successes(
    jobs: QuerySet[AbstractJob], worker_id: str, outcomes: dict[AbstractJob, dict[str, Any]]
) -> set[int]:
    """With ``SQLQUEUE_RETENTION["SUCCESSFUL"]`` 0: delete the held jobs that succeeded,
    in one DELETE fenced like the UPDATE, and take them out of ``outcomes``; the ids of
    those the fence kept out (their rows are still there). Nothing of theirs is stored,
    so the database has nothing to refuse."""
    successes = [job for job, outcome in outcomes.items() if outcome["status"] == SUCCEED.target]
    for job in successes:
        del outcomes[job]
    if not successes:
        return set()
    held = still_held(jobs, worker_id, successes)
    deleted, _ = retry_transient(jobs.db, held.delete, atomic=connections[jobs.db].in_atomic_block)
    if deleted == len(successes):
        return set()
    return set(jobs.filter(PrimaryKeyIn(job.pk for job in successes)).values_list("pk", flat=True))


def _write(jobs: QuerySet[AbstractJob], worker_id: str, outcomes: Mapping[AbstractJob, Mapping[str, Any]]) -> int:
    """One UPDATE of the held jobs among ``outcomes``; in a savepoint inside a caller's
    transaction, which a refused statement would otherwise break (PostgreSQL). Raises
    :class:`_Refused` when the database refused its data, and any other error as it
    came (a lost connection among them, for the caller to write it again)."""
    statement = engine(connections[jobs.db]).made(_OutcomeUpdate, jobs.model)
    sql, params = statement.sql(worker_id, outcomes)
    try:
        return retry_transient(jobs.db, lambda: statement.run(sql, params), atomic=connections[jobs.db].in_atomic_block)
    except DatabaseError as error:
        if _refused(jobs.db, error, sql, params):
            raise _Refused(error) from error
        raise


class _Refused(Exception):
    """The database refused the data of an outcome's statement: no retry can write it."""

    def __init__(self, error: DatabaseError) -> None:
        super().__init__(str(error))
        #: What the database said.
        self.error = error


class _OutcomeUpdate:
    """The ``UPDATE`` that writes a batch's outcomes to the jobs a worker still holds,
    compiled against a query and compiler made once for each connection (by its engine).

    Each batch compiles only its values (one ``CASE`` per column that differs between
    jobs) and the fence. Through a queryset, ``filter()`` and ``update()`` cloned it,
    resolved every column by name and set up a compiler for every batch, a large
    share of the finish's Python."""

    def __init__(self, model: type[AbstractJob], connection: BaseDatabaseWrapper) -> None:
        self._connection = connection
        self._query = model._base_manager.all().query
        self._compiler = self._query.get_compiler(connection=connection)
        self._table = connection.ops.quote_name(model._meta.db_table)
        #: Each field by name, with its column's quoted name.
        self._fields = {
            field.name: (field, connection.ops.quote_name(cast(str, field.column)))
            for field in model._meta.concrete_fields
        }
        #: Where the database notifies, the statement tells the waiters itself (``db/finished.py``).
        self._announcing = engine(connection).announcing_update(
            "{update}", self._fields[model._meta.pk.name][1], self._fields["status"][1], FINISHED
        )

    def sql(self, worker_id: str, outcomes: Mapping[AbstractJob, Mapping[str, Any]]) -> tuple[str, tuple[Any, ...]]:
        """The statement writing ``outcomes`` (not empty) to the jobs ``worker_id`` holds,
        and its parameters."""
        changes = _Changes(outcomes)
        compile_, query = self._compiler.compile, self._query
        setting, params = [], []
        for name in changes.by_column:
            field, column = self._fields[name]
            value = changes.expression(name, field, len(outcomes))
            sql, bound = compile_(value.resolve_expression(query, allow_joins=False, for_save=True))
            setting.append(f"{column} = {sql}")
            params.extend(bound)
        held, bound = compile_(HeldBy(worker_id, outcomes).resolve_expression(query))
        update = f"UPDATE {self._table} SET {', '.join(setting)} WHERE {held}"
        if self._announcing is not None:
            update = self._announcing.replace("{update}", update, 1)
        return update, (*params, *bound)

    def run(self, sql: str, params: tuple[Any, ...]) -> int:
        """Run what :meth:`sql` made: how many jobs it wrote."""
        with self._connection.cursor() as cursor:
            cursor.execute(sql, params)
            return int(cursor.rowcount)


#: Each connection's :class:`_OutcomeUpdate`.


def _write_alone(
    jobs: QuerySet[AbstractJob], worker_id: str, outcome: Mapping[str, Any], now: Any, meant: Ended
) -> Ended | None:
    """Write one job's ``outcome`` (``meant``); if the database refuses it, a failed attempt
    saying so instead; if it refuses that too (the job's earlier errors are as much as a
    row can take), the job ``FAILED`` with its errors as they were, and the refusal
    logged. What was written (None when the fence left the job out)."""
    job = meant.job
    try:
        return meant if _write(jobs, worker_id, {job: outcome}) else None
    except _Refused as refused:
        error = refused.error
        if meant.transition is SUCCEED:
            what = f"{job.task} finished, but the database refused to store its return value"
        elif "errors" in outcome:
            raised = outcome["errors"][-1]["exception_class_path"]
            what = f"{job.task} raised {raised}, but the database refused to store that error"
        else:
            what = f"{job.task} ended its attempt ({meant.transition.name}), but the database refused it"
        refusal = InvalidJobError(f"{what}: {error}")
    failure = decide(job, refusal, worker_id)
    try:
        wrote = _write(jobs, worker_id, {job: after_failure(job, failure, now)})
        return Ended(job, failure.transition, error=refusal) if wrote else None
    except _Refused as refused:
        logger.error("Job %s: %s, and the error saying so (%s); it is FAILED", job.pk, refusal, refused.error)
    failed = written(FAIL_UNRECORDED, finished_at=now)
    return Ended(job, FAIL_UNRECORDED, error=refusal) if _write(jobs, worker_id, {job: failed}) else None


def _refused(using: str, error: DatabaseError, sql: str, params: tuple[Any, ...]) -> bool:
    """Whether the database refused the data of the statement ``sql`` that raised
    ``error``: an unwritable value, or a statement larger than the server allows whose
    connection the server ended (:meth:`~django_sqlqueue.db.engines.base.Engine.too_large`). Any
    other lost connection (a killed session, a restart, a failover) is the database
    away, however many times in a row, never a refusal: the worker keeps the outcome
    and writes it again once it reconnects. A lost connection is closed, so that the
    next statement opens another. Inside a transaction nothing can reconnect."""
    connection = connections[using]
    if connection.in_atomic_block:
        return is_unwritable(error)
    lost = connection.connection is not None and not connection.is_usable()
    if lost:
        connection.close()
    return is_unwritable(error) or (lost and is_unavailable(error) and engine(connection).too_large(sql, params))


def release(
    jobs: QuerySet[AbstractJob],
    *,
    worker_id: str,
    unstarted: Iterable[AbstractJob],
    cancelled: Callable[[list[AbstractJob]], object] | None = None,
) -> int:
    """Give back claimed jobs that never started, without counting their attempt
    (``release``); one someone asked to cancel meanwhile is ``CANCELLED`` instead
    (``release_cancelled``). With ``cancelled``, the held rows are locked first (a
    cancel request waits for the give-back), and ``cancelled`` is called with those that
    became ``CANCELLED``, read back inside the transaction: each once, for its signal."""
    unstarted = list(unstarted)
    if not unstarted:
        return 0
    targets = still_held(jobs, worker_id, unstarted)

    def give_back() -> int:
        return targets.update(
            **written_case(AFTER_RELEASE, finished_at=DatabaseNow(), attempts=F("attempts") - 1, started_at=None)
        )

    if cancelled is None:
        return retry_transient(jobs.db, give_back, atomic=False)

    def give_back_and_tell() -> int:
        held = dict(targets.select_for_update().values_list("pk", "cancel_requested_at"))
        count = give_back()
        if stopped := [pk for pk, requested in held.items() if requested is not None]:
            cancelled(list(jobs.filter(PrimaryKeyIn(stopped))))
        return count

    return retry_transient(jobs.db, give_back_and_tell)


def still_held(jobs: QuerySet[AbstractJob], worker_id: str, held: Iterable[AbstractJob]) -> QuerySet[AbstractJob]:
    """The rows of ``held`` still ``RUNNING`` for ``worker_id`` at the attempt it claimed
    (the fence, :class:`~django_sqlqueue.db.expressions.HeldBy`)."""
    return jobs.filter(HeldBy(worker_id, held))
