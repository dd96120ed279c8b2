"""A batch's primary keys as one condition, cheap to build and to bind."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.core.exceptions import EmptyResultSet
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Lookup
from django.db.models.expressions import Col
from django.db.models.sql.compiler import SQLCompiler

from django_sqlqueue.db.engines import engine
from django_sqlqueue.rules.lifecycle import JobStatus

if TYPE_CHECKING:
    from django_sqlqueue.db.schema.table import AbstractJob


class PrimaryKeyIn(Lookup):
    """``pk IN (…)`` for the ids of a batch: on PostgreSQL ``pk = ANY(%s)`` with the ids
    as one array parameter.

    ``filter(pk__in=ids)`` prepares every id through the field and binds each as its
    own parameter, which psycopg then quotes one by one: per job, for every claim and
    every finish, that costs more Python than the rest of the statement. A lookup
    rather than a boolean function, so that MySQL does not get ``(…) = True``, which
    its optimizer cannot serve from the primary key."""

    prepare_rhs = False

    def __init__(self, ids: Iterable[int]) -> None:
        super().__init__(F("pk"), [int(pk) for pk in ids])

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, tuple[Any, ...]]:
        column, params = self.process_lhs(compiler, connection)
        sql, ids = _in(column, self.rhs, connection)
        return sql, (*params, *ids)


class HeldBy(Lookup):
    """The jobs of a batch still ``RUNNING`` for a worker at the attempt it claimed
    each at: ``status = 'RUNNING' AND worker = %s AND (id IN (…) AND attempts = %s OR …)``,
    one group of ids for each attempt count.

    This is the fence on every write a worker makes to the jobs it holds: a job rescued
    from it, or claimed again, has moved on and is not written. One lookup, rather than
    the same conditions as ``filter()`` keywords, because each finish writes one: Django
    resolved the keywords' names for every batch, much of the finish's Python."""

    prepare_rhs = False

    def __init__(self, worker_id: str, jobs: Iterable[AbstractJob]) -> None:
        by_attempt: dict[int, list[int]] = defaultdict(list)
        for job in jobs:
            by_attempt[job.attempts].append(int(job.pk))
        super().__init__(F("pk"), (worker_id, dict(by_attempt)))

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, tuple[Any, ...]]:
        worker_id, by_attempt = self.rhs
        pk, params = self.process_lhs(compiler, connection)
        meta = self.lhs.target.model._meta
        status, worker, attempts = (
            compiler.compile(Col(self.lhs.alias, meta.get_field(name)))[0] for name in ("status", "worker", "attempts")
        )
        groups, bound = [], [JobStatus.RUNNING.value, worker_id]
        for count, ids in by_attempt.items():
            sql, ids_bound = _in(pk, ids, connection)
            groups.append(f"({sql} AND {attempts} = %s)")
            bound.extend((*params, *ids_bound, count))
        if not groups:
            raise EmptyResultSet
        return f"{status} = %s AND {worker} = %s AND ({' OR '.join(groups)})", tuple(bound)


def _in(column: str, ids: list[int], connection: BaseDatabaseWrapper) -> tuple[str, tuple[Any, ...]]:
    """``column IN (ids)`` and its parameters, as the connection's engine binds them
    (PostgreSQL: ``column = ANY(%s)``, the ids as one array). Raises ``EmptyResultSet``
    for no ids."""
    return engine(connection).ids_in(column, ids)
