"""A batch's primary keys as one condition, cheap to build and to bind."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Lookup
from django.db.models.sql.compiler import SQLCompiler


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
        if not self.rhs:
            raise EmptyResultSet
        column, params = self.process_lhs(compiler, connection)
        return f"{column} IN ({', '.join(['%s'] * len(self.rhs))})", (*params, *self.rhs)

    def as_postgresql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, tuple[Any, ...]]:
        if not self.rhs:
            raise EmptyResultSet
        column, params = self.process_lhs(compiler, connection)
        return f"{column} = ANY(%s)", (*params, self.rhs)
