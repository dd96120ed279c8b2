"""A real gunicorn serving the tests' project (``tests.support.wsgi``), its workers
forked, for the embedded workers' tests: start it, send it requests, stop it, and
never leave a process behind (``Session``)."""

from __future__ import annotations

import contextlib
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.support.ports import free_port
from tests.support.workers import Session

#: What the server serves: the tests' project.
APPLICATION = "tests.support.wsgi:application"


class Gunicorn(Session):
    """``gunicorn --workers N [args]`` serving :data:`APPLICATION` on a free port."""

    name = "gunicorn"

    def __init__(self, workers: int, args: list[str], env: dict[str, str], python: str, log: Path) -> None:
        self.port = free_port()
        bind = f"127.0.0.1:{self.port}"
        super().__init__(
            [python, "-m", "gunicorn", "--bind", bind, "--workers", str(workers), *args, APPLICATION], env, log
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
