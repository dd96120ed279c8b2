"""Every command that needs the queue's tables, run in its own process against a database
that is down: one line saying so and exit status 1, never a driver's traceback."""

from __future__ import annotations

import subprocess

import pytest
from django.db import connection

from tests.support.workers import ROOT


@pytest.mark.parametrize(
    "command",
    [
        ["runworkers", "--burst"],
        ["sqlqueue_health"],
        ["sqlqueue_stats"],
        ["sqlqueue_stats", "--json"],
        ["sqlqueue_stats", "--watch", "1"],
    ],
    ids=" ".join,
)
def test_a_database_that_is_down_is_one_line_and_status_1(
    command: list[str], child_env: dict[str, str], python: str
) -> None:
    if connection.vendor == "sqlite":
        down = {"DB_NAME": str(ROOT / "no-such-folder" / "db.sqlite3")}
    else:
        down = {"DB_PORT": "9"}  # discard: nothing listens there
    result = subprocess.run(
        [python, "manage.py", *command],
        cwd=ROOT,
        env={**child_env, **down},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr.startswith("CommandError: The database 'default' does not answer: "), result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
