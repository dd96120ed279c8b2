"""The demo's own ``runworkers``, run beside its web server so that a job enqueued from
its page runs, and stopped with it: however the demo stops (Ctrl-C, SIGTERM), its
workers get one SIGTERM, finish what they run, and exit before it does."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from django_sqlqueue.conf import conf

#: The project's ``manage.py``, whatever the demo's working directory.
MANAGE_PY = Path(__file__).resolve().parents[2] / "manage.py"
#: Seconds the workers get past their own shutdown grace before they are killed.
STOP_MARGIN = 10.0


def runworkers_command() -> str:
    """What to type to run the workers with the demo's own interpreter, shown when the
    demo runs none (``--no-workers``)."""
    return shlex.join([sys.executable, "manage.py", "runworkers"])


@contextmanager
def workers_running() -> Iterator[subprocess.Popen[bytes]]:
    """A ``runworkers`` of one process while the block runs, stopped when it ends.

    It runs in a session of its own, so that a terminal's Ctrl-C reaches the demo only
    and the workers get exactly one SIGTERM from here (a second one would stop them at
    once). SIGTERM to the demo becomes the KeyboardInterrupt that Ctrl-C raises, so that
    the block ends and the workers are stopped rather than orphaned; one that comes while
    they are being started is held until they are, so that none is started unstopped."""
    sigterm = _HeldSigterm()
    previous = signal.signal(signal.SIGTERM, sigterm)
    process = None
    try:
        process = subprocess.Popen(
            [sys.executable, str(MANAGE_PY), "runworkers", "--processes", "1"],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        sigterm.arm()
        yield process
    finally:
        signal.signal(signal.SIGTERM, previous)
        if process is not None:
            _stop(process)


class _HeldSigterm:
    """A SIGTERM handler that raises KeyboardInterrupt once armed, and holds a signal
    that comes before until then."""

    def __init__(self) -> None:
        self.armed = self.held = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if not self.armed:
            self.held = True
            return
        raise KeyboardInterrupt

    def arm(self) -> None:
        self.armed = True
        if self.held:
            raise KeyboardInterrupt


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, time for the workers' shutdown grace, then SIGKILL to its whole session."""
    process.terminate()
    try:
        process.wait(timeout=conf.SQLQUEUE_SHUTDOWN_GRACE + STOP_MARGIN)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its worker processes too: they share its session
        process.wait()
