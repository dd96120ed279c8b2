"""Real web servers serving the tests' project, for the embedded workers' tests: gunicorn
(``tests.support.wsgi``, its workers forked) and ``runserver``. Start one, send it
requests, stop it, and never leave a process behind (``Session``)."""

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


class WebServer(Session):
    """A web server serving the tests' project on ``port``, started by ``command``."""

    def __init__(self, command: list[str], port: int, env: dict[str, str], log: Path) -> None:
        self.port = port
        super().__init__(command, env, log)

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


class Gunicorn(WebServer):
    """``gunicorn --workers N [args]`` serving :data:`APPLICATION` on a free port; no
    control socket (its default path is one for the whole user)."""

    name = "gunicorn"

    def __init__(self, workers: int, args: list[str], env: dict[str, str], python: str, log: Path) -> None:
        port = free_port()
        command = [python, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
        super().__init__([*command, "--no-control-socket", *args, APPLICATION], port, env, log)


class Runserver(WebServer):
    """``manage.py runserver`` on a free port, with its autoreloader: a parent that
    watches the files and a child that serves."""

    name = "runserver"

    def __init__(self, env: dict[str, str], python: str, log: Path) -> None:
        port = free_port()
        super().__init__([python, "manage.py", "runserver", f"127.0.0.1:{port}"], port, env, log)
