"""Moving from django-tasks-db's ``DatabaseBackend`` to ours takes only the settings
change: the same task module (``tests.djtasks.tasks``) and the same calling code
(``tests.support.tasks_client``) give the same results, run by each backend's worker."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.support.workers import ROOT

BEFORE = "tests.support.settings_tasks_db"
AFTER = "tests.support.settings_sqlqueue"


def run(python: str, env: dict[str, str], settings: str, *args: str) -> str:
    done = subprocess.run(
        [python, *args],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": settings},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def calling_code(python: str, env: dict[str, str], settings: str, *worker: str) -> list[dict[str, Any]]:
    """Enqueue with the calling code, drain the queue with the backend's worker, report."""
    ids = json.loads(run(python, env, settings, "-m", "tests.support.tasks_client", "enqueue"))
    run(python, env, settings, "manage.py", *worker)
    reports: list[dict[str, Any]] = json.loads(
        run(python, env, settings, "-m", "tests.support.tasks_client", "report", *ids)
    )
    return reports


def test_the_same_task_module_and_calling_code_run_on_both_backends(child_env: dict[str, str], python: str) -> None:
    # django-tasks-db's table, in this test's database, as its users have it.
    run(python, child_env, BEFORE, "manage.py", "migrate", "django_tasks_database", "--verbosity", "0")
    before = calling_code(
        python, child_env, BEFORE, "db_worker", "--batch", "--queue-name", "*", "--no-startup-delay", "--no-reload"
    )
    after = calling_code(python, child_env, AFTER, "runworkers", "--burst", "--processes", "1")

    assert after == before
    common = {"args": [], "kwargs": {}, "priority": 0, "queue": "default", "errors": [], "attempts": 1}
    assert after == [
        {**common, "task": "add", "status": "SUCCESSFUL", "args": [2, 3], "return_value": 5, "finished": True},
        {
            **common,
            "task": "add",
            "status": "SUCCESSFUL",
            "kwargs": {"a": 1, "b": 1},
            "priority": 5,
            "return_value": 2,
            "finished": True,
        },
        {
            **common,
            "task": "fail",
            "status": "FAILED",
            "args": ["boom"],
            "priority": 10,
            "queue": "reports",
            "return_value": None,
            "errors": ["builtins.ValueError"],
            "finished": True,
        },
        {
            **common,
            "task": "whoami",
            "status": "SUCCESSFUL",
            "args": ["hi"],
            "return_value": {"label": "hi", "attempt": 1, "status": "RUNNING"},
            "finished": True,
        },
        {
            **common,
            "task": "async_double",
            "status": "SUCCESSFUL",
            "args": [4],
            "return_value": [4, 8],
            "finished": True,
        },
    ]
