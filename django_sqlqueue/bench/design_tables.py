"""Other designs of the jobs table, made as scratch tables for the raw drain
of ``sqlqueue_bench --designs``, so that each is a figure beside today's table and the
minimal one before anything is adopted.

Each is today's table (:class:`~django_sqlqueue.db.schema.table.AbstractJob`, built by
Django's schema editor as the migrations build it) changed in one way, under names
of its own, and dropped after its drain."""

from __future__ import annotations

import copy
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, NamedTuple

from django.apps.registry import Apps
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.backends.ddl_references import Statement

from django_sqlqueue.bench.dialects import dialect_of
from django_sqlqueue.bench.raw import QueueTable, RawDatabase, jobs_table
from django_sqlqueue.db.schema.names import NameField
from django_sqlqueue.db.schema.table import AbstractJob
from django_sqlqueue.rules.lifecycle import FINISHED

#: Each design, by the name ``--designs`` takes, and what it is.
DESIGNS = {
    "today": "a fresh copy of today's jobs table, every index included",
    "partial": (
        "(a) today's table with the admin's indexes (queue and status, finished, enqueued) over finished jobs "
        "only: partial, or on MySQL/MariaDB led by a hidden generated column that is NULL until the job "
        "finishes, so that a claim changes no entry of theirs"
    ),
    "narrow": (
        "(b) a narrow hot table of what a claim reads and writes (id, queue, priority, run time, status, "
        "worker, attempts, start), and a wide table of the rest written at enqueue and at finish, when the "
        "job leaves the hot table"
    ),
    "history": "(c) today's table, a finish moving the job to an append-only history table",
    "fillfactor": "(d) today's table at fillfactor 50, room on each page for HOT updates (PostgreSQL only)",
    "read-then-lock": (
        "today's table claimed as the app claims on MySQL/MariaDB: candidates read without locks, then "
        "locked by id with SKIP LOCKED (MySQL/MariaDB only); it counts the candidates others took first"
    ),
}

#: The admin's indexes, by name: design (a) keeps them to finished jobs; the wide and history tables have them.
ADMIN_INDEXES = {"sqlqueue_job_queue_status", "sqlqueue_job_finished", "sqlqueue_job_enqueued"}
#: The claim's indexes, which the narrow table keeps.
CLAIM_INDEXES = {"sqlqueue_job_ready", "sqlqueue_job_ready_queue", "sqlqueue_job_running"}
#: MySQL/MariaDB: design (a)'s hidden column, the status of a finished job and NULL before.
MYSQL_FINISHED_STATUS_COLUMN = "finished_status"


def unsupported(design: str, connection: BaseDatabaseWrapper) -> str | None:
    """Why ``design`` cannot be made on ``connection``'s database, or None."""
    return dialect_of(connection).unsupported(design)


class FinishedIndex(models.Index):
    """Design (a)'s admin index: over finished jobs only, partial where the database has
    partial indexes; on MySQL/MariaDB with ``status`` replaced by a hidden ``VIRTUAL``
    column that is NULL until the job finishes, as the failures index is made, so that
    a claim (which leaves the other columns alone there) changes no entry."""

    def create_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, using: str = "", **kwargs: Any
    ) -> Statement:
        statuses = [str(status) for status in FINISHED]
        if dialect_of(schema_editor.connection).has_partial_indexes:
            index = models.Index(fields=self.fields, name=self.name, condition=models.Q(status__in=statuses))
            return index.create_sql(model, schema_editor, using=using, **kwargs)
        qn, column = schema_editor.quote_name, MYSQL_FINISHED_STATUS_COLUMN
        finished = ", ".join(f"'{status}'" for status in statuses)
        columns = ", ".join(qn(column if field == "status" else field) for field in self.fields)
        status_type = model._meta.get_field("status").db_type(schema_editor.connection)
        return Statement(
            f"ALTER TABLE {qn(model._meta.db_table)} ADD COLUMN IF NOT EXISTS {qn(column)} {status_type} "
            f"AS (CASE WHEN {qn('status')} IN ({finished}) THEN {qn('status')} END) VIRTUAL, "
            f"ADD INDEX {qn(self.name)} ({columns})"
        )


def _indexes(names: set[str], table: str = "sqlqueue_job") -> list[models.Index]:
    """Today's indexes called ``names``, renamed for ``table``."""
    chosen = []
    for index in AbstractJob._meta.indexes:
        if index.name in names:
            renamed = copy.copy(index)
            renamed.name = index.name.replace("sqlqueue_job", table, 1)
            chosen.append(renamed)
    return chosen


def _model(name: str, table: str, fields: dict[str, models.Field[Any, Any]], **meta: Any) -> type[models.Model]:
    """A jobs-table model on ``table`` in a registry of its own (never the project's):
    today's columns, indexes and constraints, unless ``meta`` or ``fields`` say otherwise."""
    options = {"apps": Apps(), "app_label": "sqlqueue_bench", "db_table": table, **meta}
    attributes = {"__module__": __name__, "Meta": type("Meta", (AbstractJob.Meta,), options), **fields}
    return type(name, (AbstractJob,), attributes)


class _Hot(models.Model):
    """Design (b)'s hot table: what a claim reads and writes."""

    id = models.BigAutoField(primary_key=True)
    queue = NameField(max_length=100)
    priority = models.SmallIntegerField(default=0)
    run_at = models.DateTimeField()
    status = models.CharField(max_length=10)
    worker = NameField(max_length=255, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True)
    # The claim's indexes end with it: the claim never starts a job past its deadline.
    expires_at = models.DateTimeField(null=True)

    class Meta:
        apps = Apps()
        app_label = "sqlqueue_bench"
        db_table = "sqlqueue_job"
        indexes = _indexes(CLAIM_INDEXES)

    def __str__(self) -> str:
        return f"#{self.pk} [{self.status}]"


def _cold(table: str) -> type[models.Model]:
    """Today's columns on ``table``, keyed by the job's id from elsewhere, with only the
    admin's and the failures page's indexes: the wide table of (b), the history of (c)."""
    return _model(
        "Cold",
        f"sqlqueue_job_{table}",
        {"id": models.BigIntegerField(primary_key=True)},
        indexes=_indexes({*ADMIN_INDEXES, "sqlqueue_job_failed"}, f"sqlqueue_job_{table}"),
        constraints=[],
    )


def _ddl(connection: BaseDatabaseWrapper, model: type[models.Model], name: str) -> list[str]:
    """The statements that make ``model``'s table, every ``sqlqueue_job`` in its names
    (the table's, its indexes' and constraints') replaced by ``name``."""
    with connection.schema_editor(collect_sql=True, atomic=False) as editor:
        editor.create_model(model)
    return [statement.replace("sqlqueue_job", name) for statement in editor.collected_sql]


class _Made(NamedTuple):
    """A design's tables (as models named ``sqlqueue_job…``), the queue table the raw
    drain works on, and any statements that follow the tables' own."""

    models: list[type[models.Model]]
    table: QueueTable
    then: tuple[str, ...] = ()


def _today(name: str, connection: BaseDatabaseWrapper) -> _Made:
    return _Made([_model("Today", "sqlqueue_job", {})], jobs_table(name))


def _partial(name: str, connection: BaseDatabaseWrapper) -> _Made:
    admin = [FinishedIndex(fields=index.fields, name=index.name) for index in _indexes(ADMIN_INDEXES)]
    kept = [index for index in AbstractJob._meta.indexes if index.name not in ADMIN_INDEXES]
    return _Made([_model("Partial", "sqlqueue_job", {}, indexes=[*kept, *admin])], jobs_table(name))


#: The narrow design's wide row for each new hot one: what enqueue writes of a no-op job.
_WIDE_COLUMNS = (
    "id, queue, task, args, kwargs, priority, status, run_at, attempts, max_attempts, enqueued_at, worker, errors"
)
_WIDE_VALUES = "id, queue, 'sqlqueue.noop', '[]', '{{}}', priority, status, run_at, 0, 1, {now}, '', '[]'"


def _narrow(name: str, connection: BaseDatabaseWrapper) -> _Made:
    wide = f"{name}_wide"
    finished = f"UPDATE {wide} SET status = 'SUCCESSFUL', finished_at = {{now}}"
    table = replace(
        jobs_table(name),
        columns="queue, priority, status, run_at, attempts, worker",
        row="({mark}, 0, 'READY', {now}, 0, '')",
        payload_from=wide,
        filled=(
            f"INSERT INTO {wide} ({_WIDE_COLUMNS}) SELECT {_WIDE_VALUES} FROM {name} "
            f"WHERE queue = {{mark}} AND id > (SELECT COALESCE(MAX(id), 0) FROM {wide})"
        ),
        finish=dialect_of(connection).narrow_finish(wide, finished),
    )
    return _Made([_Hot, _cold("wide")], table)


def _history(name: str, connection: BaseDatabaseWrapper) -> _Made:
    history = _cold("history")
    columns = [str(field.column) for field in history._meta.concrete_fields]
    finished = {"status": "'SUCCESSFUL'", "finished_at": "{now}"}
    values = ", ".join(finished.get(column, column) for column in columns)
    into = f"INSERT INTO {name}_history ({', '.join(columns)}) SELECT {values}"
    finish = dialect_of(connection).history_finish(into)
    return _Made([_model("Today", "sqlqueue_job", {}), history], replace(jobs_table(name), finish=finish))


def _fillfactor(name: str, connection: BaseDatabaseWrapper) -> _Made:
    return _today(name, connection)._replace(then=(f"ALTER TABLE {name} SET (fillfactor = 50)",))


def _read_then_lock(name: str, connection: BaseDatabaseWrapper) -> _Made:
    made = _today(name, connection)
    return made._replace(table=replace(made.table, read_then_lock=True))


_MAKERS: dict[str, Callable[[str, BaseDatabaseWrapper], _Made]] = {
    "today": _today,
    "partial": _partial,
    "narrow": _narrow,
    "history": _history,
    "fillfactor": _fillfactor,
    "read-then-lock": _read_then_lock,
}


@contextmanager
def scratch(design: str, connection: BaseDatabaseWrapper, raw: RawDatabase) -> Iterator[RawDatabase]:
    """``raw``'s database on the tables of ``design``, made for the drain and dropped
    after it, whatever happens meanwhile; ``connection`` (Django's) writes their DDL."""
    name = f"sqlqueue_bench_design_{secrets.token_hex(4)}"
    made = _MAKERS[design](name, connection)
    statements = [statement for model in made.models for statement in _ddl(connection, model, name)]
    raw.execute(*statements, *made.then)
    try:
        yield replace(raw, table=made.table)
    finally:
        raw.execute(*(f"DROP TABLE {model._meta.db_table.replace('sqlqueue_job', name)}" for model in made.models))
