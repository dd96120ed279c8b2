"""Django projects the documentation tells people to build (the README's Quickstart,
the tutorial's project), run as their owners run them: their own ``manage.py`` in
their own folder, in processes of their own, with their own settings.

:func:`assert_orders_run` is what both documents promise: an order's job succeeds, a
bad order's job fails, and the admin's failures page retries it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.workers import ROOT

VISITOR = Path(__file__).with_name("visitor.py")

#: The task both documents write, by its registered name.
TASK = "shop.tasks.send_receipt"


@dataclass
class Project:
    """A project in ``folder``, run with ``settings`` (its own, or a test's variant)."""

    folder: Path
    settings: str = "mysite.settings"

    def env(self) -> dict[str, str]:
        """This environment, less the test suite's settings, plus the project and this
        checkout's django_sqlqueue on the path."""
        env = {name: value for name, value in os.environ.items() if not name.startswith(("DJANGO_", "DB_"))}
        path = [str(self.folder), str(ROOT), os.environ.get("PYTHONPATH", "")]
        return {**env, "DJANGO_SETTINGS_MODULE": self.settings, "PYTHONPATH": os.pathsep.join(filter(None, path))}

    def run(self, *args: str, timeout: float = 120) -> str:
        """Run a command in the project (``python`` is this interpreter); its output, or
        the test fails with both of its streams."""
        done = self.completed(args, timeout)
        return done.stdout + done.stderr

    def completed(self, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess[str]:
        command = [sys.executable if args[0] == "python" else args[0], *args[1:]]
        done = subprocess.run(
            command, cwd=self.folder, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
        )
        assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done

    def manage(self, *args: str) -> str:
        return self.run("python", "manage.py", *args)

    def visit(self, *args: str) -> Any:
        """What the visitor (``tests/support/visitor.py``) printed for ``args``."""
        return json.loads(self.completed(("python", str(VISITOR), *args), timeout=120).stdout)


def statuses(project: Project) -> list[tuple[str, str, int, list[str]]]:
    return [(job["task"], job["status"], job["attempts"], job["errors"]) for job in project.visit("jobs")["jobs"]]


def place_orders(project: Project) -> None:
    """Order 7 and order 0 through the project's checkout view."""
    for order in ("7", "0"):
        answer = project.visit("checkout", order)
        assert (answer["status_code"], answer["body"]["status"]) == (200, "READY"), answer


def assert_orders_run(
    project: Project, runworkers: tuple[str, ...], place: Callable[[Project], None] = place_orders
) -> None:
    """Two orders through the view (by ``place``: order 7, then order 0), ``runworkers``
    (the document's own command line, made ``--burst``), the failed one retried from the
    admin's failures page and run again."""
    assert "System check identified no issues (0 silenced)." in project.manage("check")
    place(project)
    assert statuses(project) == [(TASK, "READY", 0, []), (TASK, "READY", 0, [])]

    project.run(*runworkers, "--burst")
    jobs = project.visit("jobs")["jobs"]
    assert jobs[0]["result"] == "Receipt for order 7 sent."
    assert statuses(project) == [(TASK, "SUCCESSFUL", 1, []), (TASK, "FAILED", 1, ["builtins.ValueError"])]

    retried = project.visit("retry")
    assert retried["page_status_code"] == 200
    assert retried["pressed"] == [
        {"task": TASK, "error_class": "builtins.ValueError", "status_code": 200, "messages": ["Retried 1 job."]}
    ]
    assert statuses(project)[1] == (TASK, "READY", 0, ["builtins.ValueError"])

    project.run(*runworkers, "--burst")
    assert statuses(project)[1] == (TASK, "FAILED", 1, ["builtins.ValueError", "builtins.ValueError"])
