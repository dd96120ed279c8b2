"""Jobs made without ``Model.__init__``: from the rows a claim read or returned (every
column, converted as Django converts a query's), and new ones for ``enqueue``.

A claim builds a hundred jobs each time, and ``enqueue_many`` as many as it is given;
Django's ``__init__`` sends ``pre_init`` and ``post_init`` and sets each field
through the descriptor machinery, and that cost more than the no-op job it builds.
The instances are the same ``Job`` objects, and where a receiver of ``pre_init`` or
``post_init`` listens for jobs, they are made by ``__init__`` as usual. This module is
the one place that builds jobs so; a built job equals ``Job(**fields)`` field for field
(``test_a_built_job_is_the_job_the_model_makes``), a claimed one the job the ORM reads
(``test_claimed_jobs_are_the_jobs_the_orm_reads``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import JSONField
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

if TYPE_CHECKING:
    from django_sqlqueue.db.schema.table import AbstractJob, JobT

#: What converts a value a database returned to what Django reads: ``(value, expression, connection)``.
Converter = Callable[[Any, Any, BaseDatabaseWrapper], Any]


class JobRows:
    """The columns of ``model``'s table on ``connection``, in the order a ``SELECT`` of
    the model lists them, with what converts each one's values."""

    def __init__(self, model: type[AbstractJob], connection: BaseDatabaseWrapper) -> None:
        self.model = model
        self.connection = connection
        compiler = model._base_manager.all().query.get_compiler(connection=connection)
        compiler.setup_query()
        selected = [column for column, _sql, _alias in compiler.select]
        #: The attribute names, in column order; :meth:`jobs` expects rows in this order.
        self.attnames = [column.target.attname for column in selected]
        #: The quoted column names, for a ``RETURNING`` list.
        self.columns = ", ".join(connection.ops.quote_name(column.target.column) for column in selected)
        self._converters = [
            (position, ([_empty_json_first(convert) for convert in converters], expression))
            for position, (converters, expression) in compiler.get_converters(selected).items()
        ]

    def converted(self, rows: Iterable[Sequence[Any]]) -> list[list[Any]]:
        """``rows`` as the database returned them, with each value as Django reads it.

        A NULL stays None without its converters: every converter of the job's fields
        (JSON, times, booleans) gives None for None, and a claimed job has several NULL
        columns (its result, progress, finish and cancel times, keys)."""
        converted = []
        for row in rows:
            values = list(row)
            for position, (converters, expression) in self._converters:
                value = values[position]
                if value is None:
                    continue
                for converter in converters:
                    value = converter(value, expression, self.connection)
                values[position] = value
            converted.append(values)
        return converted

    def jobs(self, rows: Iterable[Sequence[Any]], *, converted: bool = False) -> list[AbstractJob]:
        """A job for each row (all of :attr:`attnames`), as saved jobs of ``connection``'s
        database; ``converted`` when the values already are what Django reads."""
        values = rows if converted else self.converted(rows)
        model, using, attnames = self.model, self.connection.alias, self.attnames
        if init_heard(model):
            return [model.from_db(using, attnames, row) for row in values]
        return [_made(model, zip(attnames, row, strict=True), saved_on=using) for row in values]


#: The JSON of no arguments and no errors yet, which nearly every claimed job holds, and
#: what each reads as: a new list or dict each time, as the decoder would give.
_EMPTY_JSON: dict[str, Callable[[], Any]] = {"[]": list, "{}": dict}


def _empty_json_first(convert: Converter) -> Converter:
    """``convert``; a JSON field's (with Django's own decoder) reads ``[]`` and ``{}``
    without the decoder: three JSON columns a job, about a tenth of a claim's Python."""
    field = getattr(convert, "__self__", None)
    if not isinstance(field, JSONField) or field.decoder is not None or convert != field.from_db_value:
        return convert

    def converted(value: Any, expression: Any, connection: BaseDatabaseWrapper) -> Any:
        empty = _EMPTY_JSON.get(value) if type(value) is str else None
        return convert(value, expression, connection) if empty is None else empty()

    return converted


#: Each connection's :class:`JobRows`, made once: compiling the column list and its
#: converters anew cost every claim as much again.


def unsaved(model: type[JobT], **values: Any) -> JobT:
    """``model(**values)``: a new job with ``values`` for those fields, every other field
    its default (a ``db_default`` one the database's, as ``Model.__init__`` leaves it)."""
    if init_heard(model):
        return model(**values)
    defaults = _defaults(model)
    attributes = dict(defaults.fixed)
    for name, attname, make in defaults.made:
        attributes[attname] = values.pop(name) if name in values else make()
    if unknown := [name for name in values if name not in defaults.attnames]:
        raise TypeError(f"{model.__qualname__}() got unexpected keyword arguments: {', '.join(unknown)}")
    for name, value in values.items():
        attributes[defaults.attnames[name]] = value
    return _made(model, attributes, saved_on=None)


def copied(model: type[JobT], attributes: Mapping[str, Any], **values: Any) -> JobT:
    """A new ``model`` job holding another new job's ``attributes`` (its ``__dict__``
    but its state), then ``values``, and each callable default they leave made afresh
    (a list or dict of its own)."""
    job = _made(model, attributes, saved_on=None)
    held = job.__dict__
    held.update(values)
    for _name, attname, make in _defaults(model).made:
        if attname not in values:
            held[attname] = make()
    return job


class _Defaults:
    """What a new ``model`` holds before its caller's values: each field's default,
    worked out once (the database's default is one expression for every job, as
    Django's own ``get_default()`` gives it), except a callable default, called for
    every job (a new list or dict). ``get_default()`` field by field cost
    ``enqueue_many`` about a sixth of its time."""

    def __init__(self, model: type[AbstractJob]) -> None:
        fields = model._meta.concrete_fields
        self.attnames = {field.name: field.attname for field in fields}
        made = [field for field in fields if field.has_default() and callable(field.default)]
        self.made = [(field.name, field.attname, field.default) for field in made]
        self.fixed = {field.attname: field.get_default() for field in fields if field not in made}


@functools.cache
def _defaults(model: type[AbstractJob]) -> _Defaults:
    return _Defaults(model)


def _made(
    model: type[JobT], attributes: Mapping[str, Any] | Iterable[tuple[str, Any]], *, saved_on: str | None
) -> JobT:
    """A ``model`` instance holding ``attributes`` (every concrete field's, a dict or
    pairs), as ``__init__`` leaves one: saved on the database ``saved_on``, or new when None."""
    job = model.__new__(model)
    # A dict of its own, copied whole: much quicker than filling the instance's own dict
    # one attribute at a time, on every job built or claimed.
    job.__dict__ = dict(attributes)
    job._state = state = ModelState()
    if saved_on is not None:
        state.adding = False
        state.db = saved_on
    return job


def saved(job: AbstractJob, using: str, values: dict[str, Any]) -> None:
    """Make new ``job`` a saved job of ``using``'s database holding ``values`` (what the
    database gave its row: its id, its times), as ``save()`` leaves one."""
    # The fields' attributes are plain entries of the instance's dict, as setattr() leaves them.
    job.__dict__.update(values)
    state = job._state
    state.adding = False
    state.db = using


def init_heard(model: type[AbstractJob]) -> bool:
    """Whether a receiver of ``pre_init`` or ``post_init`` listens for ``model``; with
    none connected at all, as in most projects, without a look-up for the model."""
    if not pre_init.receivers and not post_init.receivers:
        return False
    return pre_init.has_listeners(model) or post_init.has_listeners(model)
