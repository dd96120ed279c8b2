"""The failure groups: which jobs are in each, the index that holds them, and how a
query reads that index on each database.

A job is in a failure group while its last attempt failed: ``FAILED`` (its attempts
spent) or ``READY`` with attempts started (waiting for its retry). The admin's failures
page lists the groups by task and exception class (``Job.last_error_class``)."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.backends.ddl_references import Statement
from django.db.models.sql import Query
from django.db.models.sql.compiler import SQLCompiler

from django_sqlqueue.db.schema.indexes import HiddenColumn, HiddenParts, drop_hidden_sql, hidden_column

#: Per status a failure group's jobs are in: which jobs of that status, and when each was
#: seen failing (a failed job when it finished; a retrying one does not finish, so when
#: the attempt that failed started).
FAILURE_GROUPS: dict[str, tuple[models.Q, str]] = {
    "FAILED": (models.Q(status="FAILED"), "finished_at"),
    "READY": (models.Q(status="READY", attempts__gt=0), "started_at"),
}
#: MySQL/MariaDB: the hidden generated columns the index is made of, each NULL unless
#: the job is in a failure group: the group's status, and when the job was seen failing.
MYSQL_STATUS_COLUMN, MYSQL_SEEN_COLUMN = "failure_status", "failure_seen_at"


class FailureIndex(models.Index):
    """The failures page's index: the groups' jobs by task and exception class, with
    when each was seen failing and its id, so that the page reads the index alone.

    PostgreSQL and SQLite: partial on ``FAILED`` (the retrying jobs are read through the
    ready jobs' index: few in a queue that keeps up). MySQL/MariaDB has no partial
    indexes, and there an index led by ``status`` had every claim and finish rewrite each
    job's entry (status, start and finish times all change). So there it is on hidden
    ``VIRTUAL`` columns that are NULL unless the job is in a failure group: a job that
    does not fail has one entry, all NULLs, which no claim or finish changes, so InnoDB
    leaves it alone. Queries read it through :class:`InFailureGroup` and
    :class:`FailureSeenAt`, which name those columns there."""

    #: PostgreSQL and SQLite: its columns, for the ``FAILED`` jobs.
    FIELDS = ("task", "last_error_class", "finished_at", "id")
    #: MySQL/MariaDB: its columns, for the jobs of both groups.
    MYSQL_COLUMNS = (MYSQL_STATUS_COLUMN, "task", "last_error_class", MYSQL_SEEN_COLUMN, "id")

    def __init__(self, *, name: str) -> None:
        super().__init__(fields=list(self.FIELDS), name=name)

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return ("django_sqlqueue.db.schema.failures.FailureIndex", (), {"name": self.name})

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        if (parts := self.hidden_parts(model, schema_editor)) is not None:
            return parts.create_sql(model, schema_editor)
        index = models.Index(fields=self.fields, name=self.name, condition=FAILURE_GROUPS["FAILED"][0])
        return index.create_sql(model, schema_editor, using=using, **kwargs)

    def hidden_parts(self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor) -> HiddenParts | None:
        """MySQL/MariaDB: its hidden columns and index; None where it is a partial index."""
        if schema_editor.connection.features.supports_partial_indexes:
            return None
        qn, field = schema_editor.quote_name, model._meta.get_field
        groups = [(_condition_sql(model, schema_editor, q), seen) for q, seen in FAILURE_GROUPS.values()]
        in_group = " OR ".join(condition for condition, _seen in groups)
        seen_at = " ".join(f"WHEN {condition} THEN {qn(seen)}" for condition, seen in groups)
        hidden = [
            (
                MYSQL_STATUS_COLUMN,
                field("status").db_type(schema_editor.connection),
                f"CASE WHEN {in_group} THEN {qn('status')} END",
            ),
            (MYSQL_SEEN_COLUMN, field("finished_at").db_type(schema_editor.connection), f"CASE {seen_at} END"),
        ]
        return HiddenParts(hidden, self.name, self.MYSQL_COLUMNS)

    def remove_sql(self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, **kwargs: Any) -> Any:
        if schema_editor.connection.features.supports_partial_indexes:
            return super().remove_sql(model, schema_editor, **kwargs)
        return drop_hidden_sql(model, schema_editor, self.name, [MYSQL_STATUS_COLUMN, MYSQL_SEEN_COLUMN])


def _condition_sql(model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, condition: models.Q) -> str:
    """``condition`` as SQL with its values inlined, as Django writes a check constraint's."""
    query = Query(model, alias_cols=False)
    compiler = query.get_compiler(connection=schema_editor.connection)
    sql, params = query.build_where(condition).as_sql(compiler, schema_editor.connection)
    return str(sql % tuple(schema_editor.quote_value(param) for param in params))


class InFailureGroup(models.Lookup):
    """The jobs of the failure group of ``status``: on MySQL/MariaDB by the index's
    hidden status column, elsewhere by the group's condition."""

    prepare_rhs = False

    def __init__(self, status: str) -> None:
        super().__init__(models.F("status"), status)

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, Any]:
        return compiler.query.build_where(FAILURE_GROUPS[self.rhs][0]).as_sql(compiler, connection)

    def as_mysql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, Any]:
        return f"{hidden_column(self.lhs, MYSQL_STATUS_COLUMN, compiler)} = %s", (self.rhs,)


class FailureSeenAt(HiddenColumn):
    """When a job of the failure group of ``status`` was seen failing: on MySQL/MariaDB
    the index's hidden column, elsewhere the group's own time column."""

    def __init__(self, status: str) -> None:
        super().__init__(FAILURE_GROUPS[status][1], MYSQL_SEEN_COLUMN, models.DateTimeField())
