"""Which processes of a ``runworkers`` ran their exit functions: this app's ``ready()``
(in the supervisor, and again in a spawned worker process) and its middleware factory
:func:`middleware` (once in each worker process, however it was started) register an
``atexit`` function that appends the process's id to the file
``SQLQUEUE_TEST_ATEXIT_FILE`` names. The supervisor run from the command line and a
forked process end with ``os._exit()``, after their exit functions."""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable
from typing import Any


def say_pid_at_exit() -> None:
    atexit.register(_say_pid, os.environ["SQLQUEUE_TEST_ATEXIT_FILE"])


def middleware(get_result: Callable[[Any], Any]) -> Callable[[Any], Any]:
    say_pid_at_exit()
    return get_result


def _say_pid(path: str) -> None:
    with open(path, "a", encoding="utf-8") as file:
        file.write(f"{os.getpid()}\n")
