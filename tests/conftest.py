from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def pytest_report_header() -> str:
    return f"database: DB_BACKEND={os.environ.get('DB_BACKEND', 'sqlite')}"


@pytest.fixture
def child_env(transactional_db: None) -> dict[str, str]:
    """The environment for a child process (a worker, a claimer) that must use this
    test's database: committed rows only, so the test must be transactional."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "DB_NAME": str(connection.settings_dict["NAME"]),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


@pytest.fixture
def python() -> str:
    return sys.executable
