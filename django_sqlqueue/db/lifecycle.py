"""The transitions of ``rules/lifecycle.py`` as SQL: which rows a transition may move
(:func:`allowed`), the columns it writes (:func:`written`), and the ``CASE`` that picks
between transitions by their guards where one statement makes several
(:func:`status_case`, the one place "a cancel request means ``CANCELLED``" is SQL), and
the columns of such a statement (:func:`written_case`)."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import Case, F, Q, Value, When

from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.exceptions import DependencyFailed
from django_sqlqueue.rules.lifecycle import Condition, Transition

#: The ``last_error_class`` of a job ``cancel_dependent`` ended.
DEPENDENCY_FAILED = f"{DependencyFailed.__module__}.{DependencyFailed.__qualname__}"

#: The conditions a statement checks, as SQL.
SQL_CONDITIONS: dict[Condition, Callable[[], Q]] = {
    Condition.DUE: lambda: Q(run_at__lte=DatabaseNow()),
    Condition.NOT_DUE: lambda: Q(run_at__gt=DatabaseNow()),
    # Cheap for a job without a deadline: the claim's rows are read anyway, NULL ends it.
    Condition.NOT_EXPIRED: lambda: Q(expires_at__isnull=True) | Q(expires_at__gt=DatabaseNow()),
    Condition.EXPIRED: lambda: Q(expires_at__lte=DatabaseNow()),
    Condition.CANCEL_REQUESTED: lambda: Q(cancel_requested_at__isnull=False),
    Condition.NOT_CANCEL_REQUESTED: lambda: Q(cancel_requested_at__isnull=True),
    Condition.DEPENDENCIES_FINISHED: lambda: Q(waiting_for=0),
    Condition.CANCELLED_BY_DEPENDENCY: lambda: Q(last_error_class=DEPENDENCY_FAILED),
}
#: The conditions no ``WHERE`` of :func:`allowed` holds, and what holds each instead.
CHECKED_ELSEWHERE: dict[Condition, str] = {
    Condition.HELD: "HeldBy, the fence of every write a worker makes",
    Condition.STARTED: "the worker, which knows which jobs it started",
    Condition.UNSTARTED: "the worker, which knows which jobs it started",
    Condition.RETURNED: "the worker, which knows what the task did",
    Condition.RAISED: "the worker, which knows what the task did, or the rescue",
    Condition.SNOOZED: "the worker, which knows what the task did",
    Condition.SNOOZES_LEFT: "snooze_transition, from the claimed job's snoozes and its task's max_snoozes",
    Condition.SNOOZES_SPENT: "snooze_transition, from the claimed job's snoozes and its task's max_snoozes",
    Condition.REFUSED: "the finisher, which writes one job at a time once the database refused a batch",
    Condition.ATTEMPTS_LEFT: "failure_transition, from the claimed job's attempts",
    Condition.ATTEMPTS_SPENT: "failure_transition, from the claimed job's attempts",
    Condition.BACKOFF_DECLINED: "rules/failures.py's decide(), which asks the task's backoff (rules/backoff.py)",
    Condition.UNIQUE_KEY_FREE: "the unique index on active jobs' keys",
    Condition.NO_SUCCESS_RETENTION: "the finisher, which reads SQLQUEUE_RETENTION",
    Condition.RETENTION_PASSED: "db/pruning.py's due()",
    Condition.WAITS_FOR_UNFINISHED: "db/dependencies.py, which counts the unfinished jobs under their row locks; "
    "db/dependents.py, from the links of a job an admin retries",
    Condition.NOTHING_UNFINISHED: "db/dependents.py, from the links of a job an admin retries",
    Condition.DEPENDENCY_FAILED: "db/dependencies.py, from the statuses of the jobs it waits for",
    Condition.NO_DEPENDENCY_FAILED: "db/dependencies.py, from the statuses of the jobs it waits for",
    Condition.UNIQUE_KEY_HELD: "db/keys/unique.py, which replaces the holder its insert conflicted with",
}


def guard(transition: Transition) -> Q:
    """The SQL conditions of ``transition``'s guard (all rows when it has none), in the
    order of their names: a set's order changes with each process's string hashes, and
    the same guard must make the same statement."""
    conditions = sorted(transition.guard & SQL_CONDITIONS.keys(), key=operator.attrgetter("name"))
    return functools.reduce(operator.and_, (SQL_CONDITIONS[condition]() for condition in conditions), Q())


def allowed(transition: Transition) -> Q:
    """The rows ``transition`` may move: in one of its sources, with its guard's SQL
    conditions. One source is ``status = …``, which partial indexes on it match."""
    (one, *more) = transition.sources
    return (Q(status__in=transition.sources) if more else Q(status=one)) & guard(transition)


def written(transition: Transition, *, over: Transition | None = None, **values: Any) -> dict[str, Any]:
    """The columns ``transition`` writes: its target status and ``values``, which must
    name every other column it writes, and no more. Raises ``ValueError`` otherwise, so a
    writer cannot drift from the table.

    ``over`` is the transition that wrote the row earlier in the same database
    transaction, when ``transition`` is made in two statements (a new row inserted as
    ``enqueue``, then made ``enqueue_waiting``): the columns ``over`` wrote are not
    written again, and need not be named."""
    columns = dict(values)
    if "status" in transition.writes:
        columns["status"] = transition.target
    expected = set(transition.writes) - (set() if over is None else set(over.writes) - {"status"})
    if set(columns) != expected:
        raise ValueError(f"{transition.name} writes {sorted(expected)}, not {sorted(columns)} (rules/lifecycle.py).")
    return columns


def status_case(transitions: Sequence[Transition]) -> Case:
    """The status ``transitions`` write, the first whose guard's SQL conditions hold (the
    last one otherwise), as one ``CASE``."""
    *guarded, last = transitions
    return Case(*(When(guard(t), then=Value(t.target)) for t in guarded), default=Value(last.target))


def column_case(transitions: Sequence[Transition], column: str, value: Any) -> Case:
    """``value`` for the rows that get a transition of ``transitions`` writing ``column``
    (by the same guards as :func:`status_case`); the others keep theirs."""
    *guarded, last = transitions
    whens = [When(guard(t), then=value if column in t.writes else F(column)) for t in guarded]
    return Case(*whens, default=value if column in last.writes else F(column))


def written_case(transitions: Sequence[Transition], **values: Any) -> dict[str, Any]:
    """The columns one statement writes that makes whichever of ``transitions`` each
    row's guards pick (:func:`status_case`): ``values`` must name every column but
    ``status`` that any of them writes, and no more (``ValueError`` otherwise, as
    :func:`written`). A column some of them leave alone is a :func:`column_case`."""
    for transition in transitions:
        written(transition, **{column: value for column, value in values.items() if column in transition.writes})
    if unknown := set(values).difference(*(transition.writes for transition in transitions)):
        names = ", ".join(transition.name for transition in transitions)
        raise ValueError(f"None of {names} writes {sorted(unknown)} (rules/lifecycle.py).")
    columns = {
        column: value if all(column in t.writes for t in transitions) else column_case(transitions, column, value)
        for column, value in values.items()
    }
    return {"status": status_case(transitions), **columns}
