"""``db/per_connection.py``: made once for each connection and model, and let go with
the connection."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, connections
from django.test import override_settings

from django_sqlqueue.db.instances import JobRows, job_rows
from django_sqlqueue.db.per_connection import PerConnection
from django_sqlqueue.models import Job, Worker
from tests.testapp.tasks import noop


def test_made_once_for_each_connection_and_model() -> None:
    calls: list[tuple[str, str]] = []

    def make(model: type[Any], connection: Any) -> object:
        calls.append((model.__name__, connection.alias))
        return object()

    cached = PerConnection(make)
    default, other = connections["default"], connections.create_connection("default")
    assert cached(Job, default) is cached(Job, default)
    assert cached(Job, other) is not cached(Job, default)
    assert cached(Worker, default) is not cached(Job, default)
    assert calls == [("Job", "default"), ("Job", "default"), ("Worker", "default")]
    cached.forget()
    cached(Job, default)
    assert len(calls) == 4


def test_let_go_with_its_connection_though_it_holds_it() -> None:
    """What is made holds its connection (a compiler does): a connection object that
    its thread let go must still be collected, as Django's would be."""
    cached: PerConnection[Any, list[Any]] = PerConnection(lambda model, connection: [connection])
    other = connections.create_connection("default")
    cached(Job, other)
    gone = weakref.ref(other)
    del other
    gc.collect()
    assert gone() is None


def test_refuses_the_proxy_that_stands_for_every_threads_connection() -> None:
    cached: PerConnection[Any, object] = PerConnection(lambda model, connection: object())
    with pytest.raises(TypeError, match="a connection object is needed"):
        cached(Job, connection)


@pytest.mark.parametrize("setting", ["USE_TZ", "TIME_ZONE"])
def test_made_again_when_the_clock_settings_change(setting: str) -> None:
    """What is made holds the database's clock as those settings compile it (a
    claim's ``started_at``, its candidates' ``run_at``): a test that overrides them
    must not meet what was made before."""
    cached: PerConnection[Any, object] = PerConnection(lambda model, connection: object())
    default = connections["default"]
    before = cached(Job, default)
    assert cached(Job, default) is before
    with override_settings(**{setting: not settings.USE_TZ if setting == "USE_TZ" else "America/Chicago"}):
        during = cached(Job, default)
        assert during is not before
    assert cached(Job, default) not in (before, during)


def test_kept_when_another_setting_changes() -> None:
    cached: PerConnection[Any, object] = PerConnection(lambda model, connection: object())
    before = cached(Job, connections["default"])
    with override_settings(SQLQUEUE_BATCH_SIZE=7):
        assert cached(Job, connections["default"]) is before


@pytest.mark.django_db
def test_what_a_connection_keeps_equals_what_is_made_afresh() -> None:
    """The shortcut (kept on the connection object) and the plain path (made now) read a
    row alike, also once the clock's settings changed under what was kept."""
    connection = connections["default"]
    Job.objects.enqueue(noop, (1,), {"a": [2]})
    for use_tz in (True, False):
        with override_settings(USE_TZ=use_tz):
            kept, fresh = job_rows(Job, connection), JobRows(Job, connection)
            assert (kept.attnames, kept.columns) == (fresh.attnames, fresh.columns)
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT {fresh.columns} FROM {connection.ops.quote_name(Job._meta.db_table)}")
                rows = cursor.fetchall()
            assert kept.converted(rows) == fresh.converted(rows)
            assert kept.converted(rows)[0][kept.attnames.index("kwargs")] == {"a": [2]}
