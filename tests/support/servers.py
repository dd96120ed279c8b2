"""A real gunicorn serving the tests' project (``tests.support.wsgi``), its workers
forked, for the embedded workers' tests: start it, send it requests, stop it, and
never leave a process behind."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ports import free_port
from tests.support.workers import ROOT, session

#: What the server serves: the tests' project.
APPLICATION = "tests.support.wsgi:application"


class Gunicorn:
    """``gunicorn --workers N [args] tests.support.wsgi:application`` in its own session,
    its output in ``log``."""

    def __init__(self, workers: int, args: list[str], env: dict[str, str], python: str, log: Path) -> None:
        self.log = log
        self.output = log.open("w")
        self.port = free_port()
        bind = f"127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [python, "-m", "gunicorn", "--bind", bind, "--workers", str(workers), *args, APPLICATION],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def get(self, path: str = "/no-such-page/") -> int:
        """The status of a GET of ``path``; 0 when no worker answers (yet)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return 0

    @contextlib.contextmanager
    def one_worker_held(self) -> Iterator[None]:
        """A connection that sends nothing: a sync worker that accepts it waits on it, so
        the requests sent meanwhile go to another worker."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10):
            yield

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, as a deployment stops it; the exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"gunicorn did not exit within {timeout} s:\n{self.text()}")

    def kill(self) -> None:
        """SIGKILL the arbiter first (it forks no more), then every worker of its session."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        for pid in session(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()

    def text(self) -> str:
        self.output.flush()
        return self.log.read_text()
