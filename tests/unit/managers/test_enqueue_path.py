"""How far an enqueue travels inside the package before its ``INSERT`` is sent: the
package's own Python calls from the manager's verb to the statement, and the modules
they run in. A short path is what a reader follows and what each enqueue pays for;
these ceilings make a change that lengthens it say so, with the calls listed in order.

Counted with ``sys.setprofile``: every Python frame whose code is in the package,
comprehensions, generator expressions and lambdas aside (a ``co_name`` in angle
brackets), a generator's resumption counted as the call it is to the profiler. The
count stops as the job's first write goes to the database: its ``INSERT``, or on
PostgreSQL the read of the ids a ``COPY`` of many jobs writes them with. Each path is
taken once first, so what a connection or a task makes once is not counted."""

from __future__ import annotations

import gc
import itertools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from django.db import connection

import django_sqlqueue
from django_sqlqueue.models import Job
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)

_PACKAGE = str(Path(django_sqlqueue.__file__).parent)
_ROOT = str(Path(_PACKAGE).parent)
#: A new unique key for each enqueue that takes one.
_KEYS = itertools.count()


def _writes_jobs(sql: str) -> bool:
    """Whether ``sql`` is the statement that begins writing the jobs."""
    return sql.lstrip().startswith("INSERT") or "nextval(" in sql


@contextmanager
def _followed() -> Iterator[list[str]]:
    """The package's calls (``module:function``, in order) made inside the block until
    the statement that writes the jobs is sent."""
    calls: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and code.co_filename.startswith(_PACKAGE) and not code.co_name.startswith("<"):
            module = code.co_filename[len(_ROOT) + 1 :].removesuffix(".py").replace("/", ".")
            calls.append(f"{module}:{code.co_name}")

    def stop_at_the_write(execute: Callable[..., Any], sql: str, *rest: Any) -> Any:
        if _writes_jobs(sql):
            sys.setprofile(None)
        return execute(sql, *rest)

    with connection.execute_wrapper(stop_at_the_write):
        sys.setprofile(profile)
        try:
            yield calls
        finally:
            sys.setprofile(None)


def _plain() -> None:
    Job.objects.enqueue(noop)


def _with_args() -> None:
    Job.objects.enqueue(noop, (1, "two"), {"three": 3})


def _unique_key() -> None:
    Job.objects.enqueue(noop, unique_key=f"path-{next(_KEYS)}")


def _tags() -> None:
    Job.objects.enqueue(noop, tags=["path"])


def _many() -> None:
    Job.objects.enqueue_many([Job.objects.build(noop, (number,)) for number in range(3)])


def _path(enqueue: Callable[[], None]) -> list[str]:
    enqueue()  # what a connection, a task or the settings make once
    # A collection while it is followed would count what it finalizes (a generator of the
    # package's that earlier tests left unfinished is closed: a call), as a long run has.
    gc.collect()
    gc.disable()
    try:
        with _followed() as calls:
            enqueue()
    finally:
        gc.enable()
    return calls


def _report(calls: list[str]) -> str:
    modules = {call.partition(":")[0] for call in calls}
    return f"{len(calls)} calls in {len(modules)} modules:\n" + "\n".join(calls)


@pytest.mark.parametrize(
    ("enqueue", "most_calls", "most_modules"),
    [
        pytest.param(_plain, 25, 10, id="plain"),
        pytest.param(_with_args, 30, 10, id="with-args"),
        pytest.param(_unique_key, 64, 19, id="unique-key"),
        pytest.param(_tags, 60, 16, id="tags"),
        # Three jobs built, then enqueued: MySQL/MariaDB writes their values into the text.
        pytest.param(_many, 120, 18, id="enqueue-many-of-3"),
    ],
)
def test_an_enqueue_reaches_its_insert_in_few_calls_and_modules(
    enqueue: Callable[[], None], most_calls: int, most_modules: int
) -> None:
    calls = _path(enqueue)
    modules = {call.partition(":")[0] for call in calls}
    assert calls, "the followed enqueue sent no statement that writes its jobs"
    assert calls[0].startswith("django_sqlqueue.managers"), _report(calls)
    assert len(calls) <= most_calls, _report(calls)
    assert len(modules) <= most_modules, _report(calls)
