"""Real ``manage.py runworkers`` processes for the tests: start them on the test's
database, wait for what the database says, stop them, and never leave one behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

#: The repository's root: the working directory of ``manage.py`` and of ``python -m tests...``.
ROOT = Path(__file__).resolve().parents[2]

#: Short clocks, so that retries, heartbeats and leases happen within a test.
FAST_CLOCKS = {
    "SQLQUEUE_RETRY_BACKOFF": "0.05",
    "SQLQUEUE_RETRY_BACKOFF_MAX": "0.2",
    "SQLQUEUE_HEARTBEAT_INTERVAL": "0.5",
    "SQLQUEUE_LEASE": "3",
    "SQLQUEUE_POLL_INTERVAL": "0.2",
    "SQLQUEUE_SHUTDOWN_GRACE": "10",
}

#: Every finished job kept: the tests' jobs carry whatever finish times their test
#: needs (a day in March, say), which the supervisor's pruning would otherwise delete
#: under them. The pruning tests pass a retention of their own.
KEEP_FINISHED = {"SQLQUEUE_RETENTION": '{"SUCCESSFUL": null, "CANCELLED": null, "FAILED": null}'}

#: A project that pools its connections with Django's pool, which only PostgreSQL has:
#: the settings of a child process, and the mark of a test case that needs them.
POOLED = {"DB_OPTIONS": '{"pool": true}', "CONN_MAX_AGE": "0"}
needs_django_pool = pytest.mark.skipif(
    connections["default"].vendor != "postgresql", reason="Django pools PostgreSQL's connections only"
)


class Session:
    """A process the tests start in a session of its own, its output in a file ``log``;
    ``name`` says which in a failure."""

    name = "the process"

    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.output = log.open("w")
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout: float) -> int:
        """The exit code; fails the test (with the output) if it does not exit in time."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.name} did not exit within {timeout} s:\n{self.text()}")

    def stop(self, timeout: float = 30) -> int:
        self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the process and every process it started. A supervisor's worker
        processes lead process groups of their own, so not its group: its session, which
        they stay in, whoever their parent is now."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # first: it starts no more of them
        for pid in session(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()

    def text(self) -> str:
        self.output.flush()
        return self.log.read_text()


def end_all(started: Sequence[Session]) -> None:
    """At a test's end: kill whichever of ``started`` still runs, and close their logs."""
    for each in started:
        if each.process.poll() is None:
            each.kill()
        each.output.close()


class Workers(Session):
    """One ``runworkers`` supervisor; ``prefix`` runs it through another program first
    (``ip netns exec HOST``, which execs it)."""

    name = "runworkers"

    def __init__(
        self, args: list[str], env: dict[str, str], python: str, log: Path, prefix: tuple[str, ...] = ()
    ) -> None:
        super().__init__([*prefix, python, "manage.py", "runworkers", *args], env, log)


def session(leader: int) -> list[int]:
    """The processes in the session of ``leader``, from Linux's ``/proc`` (none elsewhere)."""
    members = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if name.isdigit():
            with contextlib.suppress(OSError):  # it ended meanwhile
                if os.getsid(int(name)) == leader:
                    members.append(int(name))
    return members


def children_of(parent: int) -> list[int]:
    """The worker processes of a supervisor, from ``/proc``: never a stranger that reused a pid."""
    from django_sqlqueue.models import Worker

    pids = []
    for pid in Worker.objects.values_list("pid", flat=True):
        with contextlib.suppress(OSError):
            if int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                pids.append(pid)
    return pids


def wait_until(condition: Callable[[], Any], *, timeout: float, why: Callable[[], str] = str) -> Any:
    """Poll ``condition`` (usually a query) until it is truthy; fail with ``why()`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if value := condition():
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {timeout} s: {why()}")
        time.sleep(0.1)


#: A ``manage.py`` as some projects have it, without the ``if __name__ == "__main__"`` guard.
UNGUARDED_MANAGE_PY = (
    "import sys\nfrom django.core.management import execute_from_command_line\nexecute_from_command_line(sys.argv)\n"
)


def run_script(
    python: str, script: Path, text: str, *args: str, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Write ``text`` to ``script`` and run it with ``args`` from its folder, as a project's
    own launcher would be run; its output captured."""
    script.write_text(text)
    return subprocess.run(
        [python, str(script), *args], env=env, cwd=script.parent, capture_output=True, text=True, timeout=timeout
    )
