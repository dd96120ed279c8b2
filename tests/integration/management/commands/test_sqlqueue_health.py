"""``manage.py sqlqueue_health`` as a probe runs it: its own process, against real workers
(a database that is down: ``tests/integration/management/test_base.py``)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from django_sqlqueue.models import Worker
from tests.support.workers import ROOT, Workers, wait_until


def probe(env: dict[str, str], python: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "manage.py", "sqlqueue_health", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_healthy_while_workers_run_and_not_once_they_stop(
    start_workers: Callable[..., Workers], child_env: dict[str, str], python: str
) -> None:
    workers = start_workers("--processes", "2")
    wait_until(lambda: Worker.objects.count() == 2, timeout=60, why=workers.text)
    healthy = probe(child_env, python, "--min-workers", "2", "--max-lag", "30")
    assert (healthy.returncode, healthy.stdout) == (
        0,
        "OK: 2 worker process(es) alive; the oldest due job has waited 0 s.\n",
    ), healthy.stderr
    assert workers.stop() == 0
    stopped = probe(child_env, python)
    assert (stopped.returncode, stopped.stderr) == (1, "CommandError: 0 worker process(es) alive, fewer than 1.\n")


@pytest.mark.parametrize("flag", ["--max-lag=-5", "--min-workers=x"])
def test_bad_options_exit_with_usage(child_env: dict[str, str], python: str, flag: str) -> None:
    assert probe(child_env, python, flag).returncode == 2
