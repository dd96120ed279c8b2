from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.status_writes import StatusWrites


def pytest_report_header() -> str:
    return f"database: DB_BACKEND={os.environ.get('DB_BACKEND', 'sqlite')}"


def pytest_configure() -> None:
    # A suite started in the background by a shell without job control (`.ci/run &`)
    # inherits SIGINT ignored, and passes that on to every process it starts, so a
    # command under test would never see Ctrl-C. A handler set here is reset to the
    # default in each child at exec, as in a terminal.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def claims_as_a_new_worker() -> None:
    """Each test claims as a worker that has lost no candidates to another yet: on
    MySQL/MariaDB a claim after a loss reads a wider window of candidates and takes them
    by id (``CandidateWindow`` in ``db/engines/mysql``), and the window is kept on the connection that
    every test of a run shares."""
    from django.db import connections

    from django_sqlqueue.db.engines import engine
    from django_sqlqueue.db.engines.mysql import CandidateWindow

    engine(connections["default"]).forget(CandidateWindow)


@pytest.fixture(autouse=True, scope="session")
def status_writes_are_transitions() -> Iterator[StatusWrites]:
    """Every statement of the library that writes a job's status in this process, over
    the whole run, makes a transition ``rules/lifecycle.py`` declares: checked at the
    end of the session (``tests/support/status_writes.py``)."""
    from django.db import connections
    from django.db.backends.signals import connection_created

    from django_sqlqueue.models import Job

    checker = StatusWrites(Job._meta.db_table)

    def watch(connection: Any, **kwargs: Any) -> None:
        if checker not in connection.execute_wrappers:
            connection.execute_wrappers.append(checker)

    for connection in connections.all(initialized_only=True):
        watch(connection)
    connection_created.connect(watch, weak=False)
    yield checker
    connection_created.disconnect(watch)
    if undeclared := checker.undeclared():
        lines = "\n".join(f"  {source} -> {target}: {sql[:300]}" for (source, target), sql in undeclared.items())
        pytest.fail(f"Status writes that no transition of rules/lifecycle.py declares:\n{lines}", pytrace=False)
