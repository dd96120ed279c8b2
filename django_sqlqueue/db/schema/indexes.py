"""An index over the jobs in one status, that each database can build."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.backends.ddl_references import Statement
from django.db.models.expressions import Expression
from django.db.models.lookups import In
from django.db.models.sql.compiler import SQLCompiler

from django_sqlqueue.rules.lifecycle import ACTIVE, FINISHED, JobStatus

#: The finished jobs, as :class:`FinishedIndex` holds them by status, and by finish time.
FINISHED_JOBS = models.Q(status__in=[str(status) for status in FINISHED])
FINISHED_AT_SET = models.Q(finished_at__isnull=False)


class StatusIndex(models.Index):
    """A partial index on ``status = <status>`` where the database has partial indexes
    (PostgreSQL, SQLite), so it holds only the jobs in that status and stays small
    however many finished jobs the table keeps; on MySQL/MariaDB, which has none, the
    same columns led by ``status``.

    Django would warn and then skip a partial index on MySQL; this class builds the
    right one for each database under one name, so the migration stays the same."""

    def __init__(self, *, status: str, fields: list[str], name: str) -> None:
        super().__init__(fields=fields, name=name)
        self.status = status

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        kwargs = {"status": str(self.status), "fields": list(self.fields), "name": self.name}
        return ("django_sqlqueue.db.schema.indexes.StatusIndex", (), kwargs)

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        if schema_editor.connection.features.supports_partial_indexes:
            index = models.Index(fields=self.fields, name=self.name, condition=models.Q(status=self.status))
        else:
            index = models.Index(fields=["status", *self.fields], name=self.name)
        return index.create_sql(model, schema_editor, using=using, **kwargs)


#: MySQL/MariaDB: per status indexed by :class:`HiddenStatusIndex`, the hidden generated
#: column that holds a job's indexed field while the job is in that status.
MYSQL_STATUS_COLUMNS = {JobStatus.WAITING: "waiting_queue"}


@dataclass(frozen=True)
class HiddenParts:
    """MySQL/MariaDB: what an index that stands in for a partial one is made of: the
    hidden ``VIRTUAL`` ``columns`` it adds (each its name, type and expression), and the
    index ``name`` on the columns ``indexed`` (hidden or not), ``unique`` or not.

    A table being created gets them in one ``ALTER TABLE`` (:meth:`create_sql`); a live
    table in two (:meth:`online_sql`), because MariaDB cannot combine a virtual
    column's change with another at ``LOCK=NONE`` and runs the one statement under a
    shared lock, which stops claims and finishes for the whole build."""

    columns: Sequence[tuple[str, str | None, str]]
    name: str
    indexed: Sequence[str]
    unique: bool = False

    @property
    def column_names(self) -> list[str]:
        """The hidden columns it adds (and drops)."""
        return [name for name, _kind, _expression in self.columns]

    def add(self, schema_editor: BaseDatabaseSchemaEditor) -> str:
        """The ``ADD INDEX`` or ``ADD CONSTRAINT … UNIQUE`` clause."""
        qn = schema_editor.quote_name
        indexed = ", ".join(qn(column) for column in self.indexed)
        return (
            f"ADD CONSTRAINT {qn(self.name)} UNIQUE ({indexed})"
            if self.unique
            else f"ADD INDEX {qn(self.name)} ({indexed})"
        )

    def create_sql(self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor) -> Statement:
        """One ``ALTER TABLE`` that adds the columns and then the index."""
        return alter_sql(model, schema_editor, [*self._add_columns(schema_editor, ()), self.add(schema_editor)])

    def online_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, existing: Collection[str]
    ) -> list[Statement]:
        """The columns not among the table's ``existing`` ones in one ``ALTER TABLE``
        (instant), then the index alone, which the server builds in place without
        blocking writes; a column already there (an interrupted run's) is kept."""
        added = self._add_columns(schema_editor, existing)
        columns = [alter_sql(model, schema_editor, added)] if added else []
        return [*columns, alter_sql(model, schema_editor, [self.add(schema_editor)])]

    def _add_columns(self, schema_editor: BaseDatabaseSchemaEditor, existing: Collection[str]) -> list[str]:
        qn = schema_editor.quote_name
        return [
            f"ADD COLUMN {qn(name)} {kind} AS ({expression}) VIRTUAL"
            for name, kind, expression in self.columns
            if name not in existing
        ]


def alter_sql(model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, clauses: Sequence[str]) -> Statement:
    """MySQL/MariaDB: one ``ALTER TABLE`` of ``model``'s table with ``clauses``."""
    return Statement(f"ALTER TABLE {schema_editor.quote_name(model._meta.db_table)} {', '.join(clauses)}")


def drop_hidden_sql(
    model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, name: str, columns: Sequence[str]
) -> Statement:
    """MySQL/MariaDB: the ``ALTER TABLE`` that drops index ``name`` and then the hidden ``columns`` it was on."""
    qn = schema_editor.quote_name
    return alter_sql(
        model, schema_editor, [f"DROP INDEX {qn(name)}", *(f"DROP COLUMN {qn(column)}" for column in columns)]
    )


class HiddenStatusIndex(models.Index):
    """The jobs in one status by one field, as :class:`StatusIndex` holds them on
    PostgreSQL and SQLite (a partial index); on MySQL/MariaDB not led by ``status``, so
    that the claim and the finish of the other jobs never write in it.

    MySQL/MariaDB has no partial indexes, and there an index led by ``status`` is
    rewritten by every claim and every finish of every job (even ``(status, queue)``
    for the few ``WAITING`` jobs slowed every drain on MariaDB). So there
    it is on a hidden ``VIRTUAL`` column (:data:`MYSQL_STATUS_COLUMNS`) that holds the
    field while the job is in the status and is NULL otherwise: a job outside it has one
    NULL entry, which no claim or finish changes, so InnoDB leaves it alone. Queries
    read it through :class:`InStatus`, which names that column there."""

    def __init__(self, *, status: str, field: str, name: str) -> None:
        super().__init__(fields=[field], name=name)
        self.status = status

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        kwargs = {"status": str(self.status), "field": self.fields[0], "name": self.name}
        return ("django_sqlqueue.db.schema.indexes.HiddenStatusIndex", (), kwargs)

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        if (parts := self.hidden_parts(model, schema_editor)) is not None:
            return parts.create_sql(model, schema_editor)
        return StatusIndex(status=self.status, fields=list(self.fields), name=self.name).create_sql(
            model, schema_editor, using=using, **kwargs
        )

    def hidden_parts(self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor) -> HiddenParts | None:
        """MySQL/MariaDB: its hidden column and index; None where it is a partial index."""
        if schema_editor.connection.features.supports_partial_indexes:
            return None
        qn, (field,) = schema_editor.quote_name, self.fields
        column, kind = MYSQL_STATUS_COLUMNS[JobStatus(self.status)], model._meta.get_field(field)
        held = f"CASE WHEN {qn('status')} = {schema_editor.quote_value(str(self.status))} THEN {qn(field)} END"
        hidden = [(column, kind.db_type(schema_editor.connection), held)]
        return HiddenParts(hidden, self.name, [column])

    def remove_sql(self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, **kwargs: Any) -> Any:
        if schema_editor.connection.features.supports_partial_indexes:
            return super().remove_sql(model, schema_editor, **kwargs)
        return drop_hidden_sql(model, schema_editor, self.name, [MYSQL_STATUS_COLUMNS[JobStatus(self.status)]])


class InStatus(models.Lookup):
    """The jobs in ``status``: on MySQL/MariaDB, for a status a :class:`HiddenStatusIndex`
    holds, by its hidden column (``IS NOT NULL``), so that the query reads that index,
    and for a finished status by :class:`FinishedStatus`; elsewhere, and for the other
    statuses, ``status = %s``."""

    prepare_rhs = False

    def __init__(self, status: str) -> None:
        super().__init__(models.F("status"), str(status))

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, Any]:
        return compiler.query.build_where(models.Q(status=self.rhs)).as_sql(compiler, connection)

    def as_mysql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, Any]:
        if JobStatus(self.rhs) in FINISHED:  # with a finish time, the range is read from the index alone
            return f"{hidden_column(self.lhs, MYSQL_FINISHED_COLUMN, compiler)} = %s", (self.rhs,)
        if (hidden := MYSQL_STATUS_COLUMNS.get(JobStatus(self.rhs))) is None:
            return self.as_sql(compiler, connection)
        return f"{hidden_column(self.lhs, hidden, compiler)} IS NOT NULL", ()


class HiddenColumn(Expression):
    """The column ``field``, read on MySQL/MariaDB from the hidden generated column
    ``hidden`` that stands for it in an index there (NULL for the jobs that index
    leaves out), so that the query reads that index alone."""

    def __init__(self, field: str, hidden: str, output_field: models.Field[Any, Any]) -> None:
        super().__init__(output_field=output_field)
        self.source: Any = models.F(field)
        self.hidden = hidden

    def get_source_expressions(self) -> list[Any]:
        return [self.source]

    def set_source_expressions(self, exprs: Sequence[Any]) -> None:
        (self.source,) = exprs

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, Any]:
        return compiler.compile(self.source)

    def as_mysql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, Any]:
        return hidden_column(self.source, self.hidden, compiler), ()


class FinishedStatus(HiddenColumn):
    """A job's status, to be grouped by or compared with finished statuses only: on
    MySQL/MariaDB the hidden column of the admin's finished indexes
    (:class:`HiddenFinishedIndex`), NULL until the job finishes."""

    def __init__(self) -> None:
        super().__init__("status", MYSQL_FINISHED_COLUMN, models.CharField())


def finished_in(status: str, *more: str) -> In:
    """The jobs finished in ``status`` or any of ``more`` (finished statuses only), by
    :class:`FinishedStatus`: on MySQL/MariaDB from the admin's finished indexes, where
    ``status = …`` is read from a claim index led by ``status``, without the finish time."""
    return In(FinishedStatus(), [str(each) for each in (status, *more)])


def hidden_column(column: Any, hidden: str, compiler: SQLCompiler) -> str:
    """MySQL/MariaDB: the hidden column ``hidden`` of the table the resolved ``column`` is read from."""
    quote = compiler.connection.ops.quote_name
    return f"{quote(column.alias)}.{quote(hidden)}"


class FinishedIndex(models.Index):
    """An index the admin and the reports read for finished jobs (``over`` says which
    rows those are), partial on PostgreSQL so that a claim, a retry or a release, which
    leave a job unfinished, write no entry of it (with these indexes whole, every claim
    and finish wrote in each of them, and the drain was markedly slower).

    PostgreSQL writes an entry in every index of the table for each row version that is
    not a HOT update (every claim and finish), unless the row is outside a partial
    index's condition. Its planner uses the index for a query whose filter implies
    ``over``: the finished statuses, or a range of ``finished_at``. SQLite and MySQL/
    MariaDB get the index over every job: SQLite's drain gained nothing, and MariaDB
    has no partial indexes (InnoDB leaves an index alone when its columns do not change:
    :class:`HiddenFinishedIndex` makes it so there)."""

    def __init__(self, *, fields: list[str], name: str, over: models.Q) -> None:
        super().__init__(fields=fields, name=name)
        self.over = over

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        kwargs = {"fields": list(self.fields), "name": self.name, "over": self.over}
        return ("django_sqlqueue.db.schema.indexes.FinishedIndex", (), kwargs)

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        condition = self.over if schema_editor.connection.vendor == "postgresql" else None
        index = models.Index(fields=self.fields, name=self.name, condition=condition)
        return index.create_sql(model, schema_editor, using=using, **kwargs)


#: MySQL/MariaDB: the hidden generated column :class:`HiddenFinishedIndex` holds in place
#: of ``status``: a finished job's status, NULL before it finishes.
MYSQL_FINISHED_COLUMN = "finished_status"


class HiddenFinishedIndex(FinishedIndex):
    """A :class:`FinishedIndex` that on MySQL/MariaDB too leaves a claim, a retry or a
    release alone: there ``status`` is replaced in it by a hidden ``VIRTUAL`` column
    (:data:`MYSQL_FINISHED_COLUMN`) that is NULL until the job finishes, so an
    unfinished job's entry stays as enqueue wrote it (``finished_at`` is NULL too) and
    is rewritten once, by the finish. Queries read it through
    :class:`FinishedStatus` and :func:`finished_in`, which name that column there.

    The admin's two indexes share the column: the one made with ``adds_column`` adds it
    (and drops it when removed), so it is made first and removed last. PostgreSQL and
    SQLite get the :class:`FinishedIndex` it replaces, unchanged."""

    def __init__(self, *, fields: list[str], name: str, over: models.Q, adds_column: bool = False) -> None:
        super().__init__(fields=fields, name=name, over=over)
        self.adds_column = adds_column

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        _path, args, kwargs = super().deconstruct()
        kwargs.update({"adds_column": True} if self.adds_column else {})
        return ("django_sqlqueue.db.schema.indexes.HiddenFinishedIndex", args, kwargs)

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        if (parts := self.hidden_parts(model, schema_editor)) is not None:
            return parts.create_sql(model, schema_editor)
        return super().create_sql(model, schema_editor, using=using, **kwargs)

    def hidden_parts(self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor) -> HiddenParts | None:
        """MySQL/MariaDB: its index and, made with ``adds_column``, the hidden column;
        None on PostgreSQL and SQLite."""
        if schema_editor.connection.vendor != "mysql":
            return None
        qn, column = schema_editor.quote_name, MYSQL_FINISHED_COLUMN
        indexed = [column if field == "status" else field for field in self.fields]
        hidden = []
        if self.adds_column:
            finished = ", ".join(schema_editor.quote_value(str(status)) for status in FINISHED)
            status_type = model._meta.get_field("status").db_type(schema_editor.connection)
            hidden = [(column, status_type, f"CASE WHEN {qn('status')} IN ({finished}) THEN {qn('status')} END")]
        return HiddenParts(hidden, self.name, indexed)

    def remove_sql(self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, **kwargs: Any) -> Any:
        if schema_editor.connection.vendor != "mysql" or not self.adds_column:
            return super().remove_sql(model, schema_editor, **kwargs)
        return drop_hidden_sql(model, schema_editor, self.name, [MYSQL_FINISHED_COLUMN])


class KeyedIndex(models.Index):
    """An index over the rows whose first field is set: partial (``IS NOT NULL``) on
    PostgreSQL and SQLite, so jobs without that field never touch it; on MySQL/MariaDB
    the first field alone, so that a status change of such a job does not either."""

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return ("django_sqlqueue.db.schema.indexes.KeyedIndex", (), {"fields": list(self.fields), "name": self.name})

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        first = self.fields[0]
        if schema_editor.connection.features.supports_partial_indexes:
            index = models.Index(fields=self.fields, name=self.name, condition=models.Q(**{f"{first}__isnull": False}))
        else:
            index = models.Index(fields=[first], name=self.name)
        return index.create_sql(model, schema_editor, using=using, **kwargs)


class ExpiringIndex(models.Index):
    """The ready jobs that have an ``expires_at``, by it: what the expiry sweep reads.
    Partial on PostgreSQL and SQLite (``READY`` and ``expires_at IS NOT NULL``), so a
    job without a deadline never touches it; on MySQL/MariaDB ``expires_at`` alone,
    so that a claim or finish (a status change) does not either."""

    def __init__(self, *, name: str) -> None:
        super().__init__(fields=["expires_at"], name=name)

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        return ("django_sqlqueue.db.schema.indexes.ExpiringIndex", (), {"name": self.name})

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        condition = None
        if schema_editor.connection.features.supports_partial_indexes:
            condition = models.Q(status=JobStatus.READY, expires_at__isnull=False)
        index = models.Index(fields=self.fields, name=self.name, condition=condition)
        return index.create_sql(model, schema_editor, using=using, **kwargs)


#: MySQL/MariaDB: the hidden generated column that holds a job's key while it is active.
MYSQL_ACTIVE_KEY_COLUMN = "unique_key_active"


class ActiveKeyConstraint(models.UniqueConstraint):
    """At most one active (``WAITING``, ``READY`` or ``RUNNING``) job per ``unique_key``; with
    ``kept``, a job whose ``unique_until_pruned`` is set holds its key whatever its
    status, until it is deleted.

    PostgreSQL and SQLite: a partial unique index over the active jobs that have a key,
    so keyless jobs add nothing to it. MySQL/MariaDB has no partial indexes (and Django
    silently skips a conditional ``UniqueConstraint`` there): a hidden ``VIRTUAL``
    generated column holds the key (as bytes, compared exactly like the others do) while
    the job is active and NULL otherwise, with a unique index on it. Being virtual it
    costs no row space and no table rebuild; a claim or finish of a keyless job
    leaves its NULL unchanged, so InnoDB does not touch the index.

    It is the ``KeyIndex`` that the engines read a key's holder through."""

    #: MySQL/MariaDB: the hidden column its unique index is on.
    mysql_column = MYSQL_ACTIVE_KEY_COLUMN

    def __init__(self, *, name: str, kept: bool = False) -> None:
        super().__init__(fields=["unique_key"], name=name)
        self.kept = kept

    def deconstruct(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        options: dict[str, Any] = {"name": self.name, **({"kept": True} if self.kept else {})}
        return ("django_sqlqueue.db.schema.indexes.ActiveKeyConstraint", (), options)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActiveKeyConstraint) and (self.name, self.kept) == (other.name, other.kept)

    def __hash__(self) -> int:
        return hash((self.name, self.kept))

    def holding(self) -> models.Q:
        """The jobs that hold their key."""
        active = models.Q(status__in=list(ACTIVE))
        return active | models.Q(unique_until_pruned=True) if self.kept else active

    def _partial(self) -> models.UniqueConstraint:
        # The key's test first: SQLite evaluates a partial index's condition on every
        # UPDATE of a column it names, and an IN of more than two values builds a
        # temporary table each time. First, a keyless job stops there.
        condition = models.Q(unique_key__isnull=False) & self.holding()
        return models.UniqueConstraint(fields=["unique_key"], condition=condition, name=self.name)

    def validate(self, *args: Any, **kwargs: Any) -> None:
        """``full_clean()``: only active jobs' keys must differ."""
        self._partial().validate(*args, **kwargs)

    def constraint_sql(self, model: Any, schema_editor: BaseDatabaseSchemaEditor | None) -> Any:
        assert schema_editor is not None
        if schema_editor.connection.features.supports_partial_indexes:
            return self._partial().constraint_sql(model, schema_editor)
        return None  # created by create_sql, which adds its column

    def create_sql(self, model: Any, schema_editor: BaseDatabaseSchemaEditor | None) -> Any:
        assert schema_editor is not None
        if (parts := self.hidden_parts(model, schema_editor)) is not None:
            return parts.create_sql(model, schema_editor)
        return self._partial().create_sql(model, schema_editor)

    def hidden_parts(self, model: Any, schema_editor: BaseDatabaseSchemaEditor) -> HiddenParts | None:
        """MySQL/MariaDB: its hidden column and unique index; None where it is a partial index."""
        if schema_editor.connection.features.supports_partial_indexes:
            return None
        qn = schema_editor.quote_name
        statuses = ", ".join(f"'{status.value}'" for status in ACTIVE)
        holding = f"{qn('status')} IN ({statuses})" + (f" OR {qn('unique_until_pruned')}" if self.kept else "")
        key = f"CASE WHEN {holding} THEN CAST({qn('unique_key')} AS BINARY) END"
        hidden = [(MYSQL_ACTIVE_KEY_COLUMN, "VARBINARY(1020)", key)]
        return HiddenParts(hidden, self.name, [MYSQL_ACTIVE_KEY_COLUMN], unique=True)

    def remove_sql(self, model: Any, schema_editor: BaseDatabaseSchemaEditor | None) -> Any:
        assert schema_editor is not None
        if schema_editor.connection.features.supports_partial_indexes:
            return self._partial().remove_sql(model, schema_editor)
        return drop_hidden_sql(model, schema_editor, self.name, [MYSQL_ACTIVE_KEY_COLUMN])
