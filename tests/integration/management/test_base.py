"""Every command that needs the queue's tables, run in its own process against a database
that is down: one line saying so and exit status 1, never a driver's traceback."""

from __future__ import annotations

import subprocess

import pytest
from django.db import connection

from tests.support.workers import POOLED, ROOT, needs_django_pool


@pytest.mark.parametrize(
    ("command", "settings"),
    [
        pytest.param(["runworkers", "--burst"], {}, id="runworkers --burst"),
        pytest.param(["sqlqueue_health"], {}, id="sqlqueue_health"),
        pytest.param(["sqlqueue_stats"], {}, id="sqlqueue_stats"),
        pytest.param(["sqlqueue_stats", "--json"], {}, id="sqlqueue_stats --json"),
        pytest.param(["sqlqueue_stats", "--watch", "1"], {}, id="sqlqueue_stats --watch 1"),
        # Through the pool, each waited out its 30 s timeout, the pool logging every attempt.
        pytest.param(["runworkers", "--burst"], POOLED, marks=needs_django_pool, id="runworkers --burst, pooled"),
        pytest.param(["sqlqueue_health"], POOLED, marks=needs_django_pool, id="sqlqueue_health, pooled"),
    ],
)
def test_a_database_that_is_down_is_one_line_and_status_1(
    command: list[str], settings: dict[str, str], child_env: dict[str, str], python: str
) -> None:
    if connection.vendor == "sqlite":
        down = {"DB_NAME": str(ROOT / "no-such-folder" / "db.sqlite3")}
    else:
        down = {"DB_PORT": "9"}  # discard: nothing listens there
    result = subprocess.run(
        [python, "manage.py", *command],
        cwd=ROOT,
        env={**child_env, **settings, **down},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr.startswith("CommandError: The database 'default' does not answer: "), result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
