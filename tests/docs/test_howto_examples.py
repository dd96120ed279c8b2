"""The how-to guides' example project (``docs/howto/examples/``), whose files the guides
include: its own tests pass, which run the guides' code on the test database (through the
testing helpers, and a ``runworkers --burst`` whose processes import the example app's
tasks) and the system checks on its settings.

They run in a process of their own, with the project's settings: its tasks are
registered there and nowhere else, so they change nothing of the suite's registry or
checks. Its tests get a test database of their own (``mysite.settings``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

PROJECT = Path(__file__).resolve().parents[2] / "docs" / "howto" / "examples"
#: The tests in ``shop/tests/``: a run that collects fewer has lost some.
EXAMPLE_TESTS = 23


def test_the_guides_code_runs_on_the_test_database() -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mysite.settings",
        "PYTHONPATH": os.pathsep.join([str(PROJECT), str(PROJECT.parents[2]), os.environ.get("PYTHONPATH", "")]),
    }
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "shop", "-q", "-p", "no:cacheprovider", "--ds", "mysite.settings"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert re.search(rf"^{EXAMPLE_TESTS} passed", ran.stdout, re.MULTILINE), ran.stdout
