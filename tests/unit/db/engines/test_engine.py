"""``db/engines``: one engine per connection object, what it makes kept once for each
model, let go with the connection, and made again when the clock's settings change."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, connections
from django.test import override_settings

from django_sqlqueue.db import engines
from django_sqlqueue.db.engines import ENGINES, engine, engine_for
from django_sqlqueue.db.instances import JobRows
from django_sqlqueue.models import Job, Worker
from tests.support.unopened import unopened
from tests.testapp.tasks import noop


def test_one_engine_for_each_connection_object() -> None:
    default, other = connections["default"], connections.create_connection("default")
    assert engine(default) is engine(default) is engine_for("default")
    assert engine(other) is not engine(default)
    assert type(engine(other)) is type(engine(default)) is ENGINES[default.vendor]


def test_made_once_for_each_connection_and_model() -> None:
    calls: list[tuple[str, str]] = []

    def make(model: type[Any], connection: Any) -> object:
        calls.append((model.__name__, connection.alias))
        return object()

    default, other = engine(connections["default"]), engine(connections.create_connection("default"))
    assert default.made(make, Job) is default.made(make, Job)
    assert other.made(make, Job) is not default.made(make, Job)
    assert default.made(make, Worker) is not default.made(make, Job)
    assert calls == [("Job", "default"), ("Job", "default"), ("Worker", "default")]
    engines.forget()
    engine(connections["default"]).made(make, Job)
    assert len(calls) == 4


def test_forgets_what_one_maker_made_and_keeps_the_rest() -> None:
    kept = engine(connections["default"])
    mine, other = kept.made(something, Job), kept.made(JobRows, Job)
    kept.forget(something)
    assert kept.made(something, Job) is not mine
    assert kept.made(JobRows, Job) is other


def test_let_go_with_its_connection_though_it_holds_it() -> None:
    """What is made holds its connection (a compiler does): a connection object that
    its thread let go must still be collected, as Django's would be."""
    other = connections.create_connection("default")
    engine(other).made(lambda model, connection: [connection], Job)
    gone = weakref.ref(other)
    del other
    gc.collect()
    assert gone() is None


def test_refuses_the_proxy_that_stands_for_every_threads_connection() -> None:
    with pytest.raises(TypeError, match="a connection object is needed"):
        engine(connection)


def test_refuses_a_database_it_has_no_engine_for() -> None:
    dummy = unopened("dummy", None, alias="elsewhere")
    with pytest.raises(ImproperlyConfigured, match="runs on PostgreSQL, MySQL/MariaDB and SQLite, not on"):
        engine(dummy)


@pytest.mark.parametrize("setting", ["USE_TZ", "TIME_ZONE"])
def test_made_again_when_the_clock_settings_change(setting: str) -> None:
    """What is made holds the database's clock as those settings compile it (a
    claim's ``started_at``, its candidates' ``run_at``): a test that overrides them
    must not meet what was made before."""

    def made() -> object:
        return engine(connections["default"]).made(something, Job)

    before = made()
    assert made() is before
    with override_settings(**{setting: not settings.USE_TZ if setting == "USE_TZ" else "America/Chicago"}):
        during = made()
        assert during is not before
    assert made() not in (before, during)


def something(model: type[Any], connection: Any) -> object:
    return object()


def test_kept_when_another_setting_changes() -> None:
    before = engine(connections["default"]).made(something, Job)
    with override_settings(SQLQUEUE_BATCH_SIZE=7):
        assert engine(connections["default"]).made(something, Job) is before


@pytest.mark.django_db
def test_what_a_connection_keeps_equals_what_is_made_afresh() -> None:
    """The shortcut (kept by the connection's engine) and the plain path (made now) read
    a row alike, also once the clock's settings changed under what was kept."""
    connection = connections["default"]
    Job.objects.enqueue(noop, (1,), {"a": [2]})
    for use_tz in (True, False):
        with override_settings(USE_TZ=use_tz):
            kept, fresh = engine(connection).made(JobRows, Job), JobRows(Job, connection)
            assert (kept.attnames, kept.columns) == (fresh.attnames, fresh.columns)
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT {fresh.columns} FROM {connection.ops.quote_name(Job._meta.db_table)}")
                rows = cursor.fetchall()
            assert kept.converted(rows) == fresh.converted(rows)
            assert kept.converted(rows)[0][kept.attnames.index("kwargs")] == {"a": [2]}
