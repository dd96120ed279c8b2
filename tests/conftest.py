from __future__ import annotations

import os
import signal

import pytest


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
    by id (``db/candidate_window``), and the window is kept on the connection that
    every test of a run shares."""
    from django_sqlqueue.db import claiming

    claiming.candidate_windows.forget()
