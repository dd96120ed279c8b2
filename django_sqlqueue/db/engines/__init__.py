"""One engine per database: everything the queue does differently on PostgreSQL,
MySQL/MariaDB and SQLite, each in its own module behind :class:`~.base.Engine`.

:func:`engine` gives a connection's engine, made on first use and kept on the
connection object while it lives (with what the engine made for it). Only this package
reads ``connection.vendor`` at run time; the migrations and the schema code aside."""

from __future__ import annotations

import itertools
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.db.engines.base import Engine
from django_sqlqueue.db.engines.mysql import MySQL
from django_sqlqueue.db.engines.postgresql import PostgreSQL
from django_sqlqueue.db.engines.sqlite import SQLite

#: Every engine, by the ``connection.vendor`` it runs on.
ENGINES: dict[str, type[Engine]] = {engine.vendor: engine for engine in (PostgreSQL, MySQL, SQLite)}

#: The attribute of a connection object that holds its engine.
_ATTRIBUTE = "_sqlqueue_engine"
_generations = itertools.count()
_generation = next(_generations)


def engine(connection: BaseDatabaseWrapper) -> Engine:
    """The engine of ``connection``, a connection object (``connections[alias]``)."""
    if not isinstance(connection, BaseDatabaseWrapper):
        # ``django.db.connection`` is one proxy for every thread's connection.
        raise TypeError(f"a connection object is needed (connections[alias]), not {connection!r}")
    kept: tuple[int, Engine] | None = connection.__dict__.get(_ATTRIBUTE)
    if kept is None or kept[0] != _generation:
        if not supports(connection):
            raise ImproperlyConfigured(
                f"django-sqlqueue runs on PostgreSQL, MySQL/MariaDB and SQLite, not on {connection.display_name} "
                f"(database {connection.alias!r})"
            )
        made = ENGINES[connection.vendor](connection)
        kept = connection.__dict__[_ATTRIBUTE] = (_generation, made)
    return kept[1]


def supports(connection: BaseDatabaseWrapper) -> bool:
    """Whether the queue has an engine for ``connection``'s database."""
    return connection.vendor in ENGINES


def engine_for(using: str) -> Engine:
    """The engine of the database ``using`` names, for this thread's connection."""
    return engine(connections[using])


def forget() -> None:
    """Make every connection's engine, and what it keeps, again on next use.

    What an engine made holds the database's clock as ``USE_TZ`` and ``TIME_ZONE``
    have it, so a change of either (a test's ``override_settings``) forgets them, as
    Django then resets its connections' time zones; tests that count what is made
    forget it too."""
    global _generation
    _generation = next(_generations)


#: The settings that what an engine makes depends on: the SQL of the database's clock.
_CLOCK_SETTINGS = frozenset({"USE_TZ", "TIME_ZONE"})


def _forget_on_clock_settings(*, setting: str, **kwargs: Any) -> None:
    if setting in _CLOCK_SETTINGS:
        forget()


setting_changed.connect(_forget_on_clock_settings, dispatch_uid="django_sqlqueue.db.engines")
