"""What is compiled once for each database connection and kept while it lives: the
column lists, converters and statements that every claim and enqueue would otherwise
compile again (about 150 µs a claim, 100 µs an enqueue).

Django gives each thread its own connection object for its whole life and reconnects
inside it, so what a connection's backend compiles stays true for as long as it does.
What is made is kept on the connection object itself: it holds its connection (its
compiler, its converters' argument), and anything that outlived the connection, such
as a module's dict of them, would keep every thread's connection alive after its thread
ended (a web server's, say).

What is made holds the database's clock as ``USE_TZ`` and ``TIME_ZONE`` have it, so a
change of either (a test's ``override_settings``) makes everything again, as Django
then resets its connections' time zones. Hidden state, kept here alone: what a
connection keeps reads a row as what is made afresh does
(``test_what_a_connection_keeps_equals_what_is_made_afresh``)."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.core.signals import setting_changed
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

Made = TypeVar("Made")
#: The model things are made for: the jobs table's for most, any of the queue's tables'.
Model = TypeVar("Model", bound=models.Model)

#: The attribute of a connection object that holds what was made for it.
_ATTRIBUTE = "_sqlqueue_per_connection"


class PerConnection(Generic[Model, Made]):
    """``make(model, connection)``, made once for each connection and model."""

    _generations = itertools.count()
    _every: weakref.WeakSet[PerConnection[Any, Any]] = weakref.WeakSet()

    def __init__(self, make: Callable[[type[Model], BaseDatabaseWrapper], Made]) -> None:
        self._make = make
        self._generation = next(self._generations)
        self._every.add(self)

    def __call__(self, model: type[Model], connection: BaseDatabaseWrapper) -> Made:
        if not isinstance(connection, BaseDatabaseWrapper):
            # ``django.db.connection`` is one proxy for every thread's connection.
            raise TypeError(f"a connection object is needed (connections[alias]), not {connection!r}")
        made: dict[Any, Any] = connection.__dict__.setdefault(_ATTRIBUTE, {})
        key = (self._generation, model)
        if (value := made.get(key)) is None:
            value = made[key] = self._make(model, connection)
        return value

    def forget(self) -> None:
        """Make everything again on next use (tests that count what is made)."""
        self._generation = next(self._generations)


#: The settings that what is made depends on: the SQL of the database's clock.
_CLOCK_SETTINGS = frozenset({"USE_TZ", "TIME_ZONE"})


def _forget_on_clock_settings(*, setting: str, **kwargs: Any) -> None:
    if setting in _CLOCK_SETTINGS:
        for made in list(PerConnection._every):
            made.forget()


setting_changed.connect(_forget_on_clock_settings, dispatch_uid="django_sqlqueue.db.per_connection")
