"""Every test in this folder starts OS processes, and is marked ``processes`` here, so
that ``pytest -m "not processes"`` runs the in-process tests only. The fixtures that
start processes live here too: a test outside this folder cannot use them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.support.workers import FAST_CLOCKS, KEEP_FINISHED, ROOT, Workers, end_all


def pytest_itemcollected(item: pytest.Item) -> None:
    # Called only for the items under this folder: pytest scopes a conftest's hooks by path.
    item.add_marker(pytest.mark.processes)


@pytest.fixture
def child_env(transactional_db: None) -> dict[str, str]:
    """The environment for a child process (a worker, a claimer) that must use this
    test's database: committed rows only, so the test must be transactional."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DB_NAME": str(connection.settings_dict["NAME"]),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def start_workers(child_env: dict[str, str], python: str, tmp_path: Path) -> Iterator[Callable[..., Workers]]:
    """``start_workers(*args, **env)``: a running ``runworkers`` on this test's database,
    with :data:`FAST_CLOCKS` and :data:`KEEP_FINISHED` unless ``env`` says otherwise."""
    started: list[Workers] = []

    def start(*args: str, **env: str) -> Workers:
        workers = Workers(
            list(args),
            {**child_env, **FAST_CLOCKS, **KEEP_FINISHED, **env},
            python,
            tmp_path / f"runworkers-{len(started)}.log",
        )
        started.append(workers)
        return workers

    yield start
    end_all(started)
