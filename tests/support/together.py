"""Child processes that start work at the same moment, for the concurrency tests: each
sets Django up, says ``ready`` on stdout and waits for a line on stdin (the claimer,
the uniquer)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.support.workers import ROOT


def run_together(commands: list[list[str]], env: dict[str, str], timeout: float = 120) -> list[dict[str, Any]]:
    """Start every command, wait until each is ready, let them all go at once, and
    return the JSON each printed last; fails the test if one did not exit 0."""
    children = [
        subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for command in commands
    ]
    try:
        for child in children:
            assert child.stdout is not None
            if (line := child.stdout.readline()) != "ready\n":
                out, err = child.communicate(timeout=30)
                pytest.fail(f"a child process did not start: {line + out!r}\n{err}")
        for child in children:  # all at once: they really contend
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        outputs = [child.communicate(timeout=timeout) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()
    reports = []
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert "database is locked" not in err
        assert "Traceback" not in err
        reports.append(json.loads(out.splitlines()[-1]))
    return reports
