"""What ``SQLQUEUE_EMBEDDED`` may hold: the queues and threads of the workers a web
process runs on its own threads (``runner/embedded.py``), checked as the setting is read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django_sqlqueue.rules.queues import queue_name_problem, unlisted_queues_problem

#: The start of the names of embedded workers (``embedded:HOST:PID:1:xxxx``) and of their
#: process on the maintenance lease (``embedded:HOST:PID``), which tells them from
#: ``runworkers``' on the admin's workers page.
EMBEDDED_PREFIX = "embedded:"
#: The most threads an embedded worker may run: a web process that needs more runs ``runworkers``.
MAX_EMBEDDED_THREADS = 32
_KEYS = ("queues", "threads")


@dataclass(frozen=True)
class Embedded:
    """The embedded workers of each web process: the ``queues`` they claim from (None:
    every queue) and the ``threads`` their jobs run on."""

    queues: tuple[str, ...] | None = None
    threads: int = 1


def parse_embedded(value: Any, allowed: frozenset[str] | None) -> Embedded:
    """``value`` (a dict with ``queues`` and ``threads``, each optional) as :class:`Embedded`;
    ``ValueError`` saying what is wrong. ``allowed`` is ``SQLQUEUE_QUEUES``."""
    if not isinstance(value, Mapping):
        raise ValueError(f"must be None (off) or a dict with 'queues' and 'threads', not {value!r}")
    if unknown := sorted(str(key) for key in value if key not in _KEYS):
        raise ValueError(f"unknown keys {unknown}: only {list(_KEYS)} are read")
    queues = value.get("queues")
    if queues is not None:
        if isinstance(queues, str) or not isinstance(queues, (list, tuple)) or not queues:
            raise ValueError(f"'queues' must be a non-empty list of queue names or None (every queue), not {queues!r}")
        for name in queues:
            if problem := queue_name_problem(name):
                raise ValueError(problem)
        if problem := unlisted_queues_problem(queues, allowed):
            raise ValueError(problem)
        queues = tuple(queues)
    threads = value.get("threads", 1)
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_EMBEDDED_THREADS:
        raise ValueError(f"'threads' must be an integer from 1 to {MAX_EMBEDDED_THREADS}, not {threads!r}")
    return Embedded(queues=queues, threads=threads)
