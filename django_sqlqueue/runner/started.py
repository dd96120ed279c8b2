"""Which jobs a worker process has started and not yet recorded, kept in memory the
process shares with its supervisor: a slot for each job of the batch it runs.

The supervisor needs them to enforce timeouts and cancel grace periods, and, when the
process dies, to tell the jobs that ran (a failed attempt each) from those that never
started (given back uncounted). A job stays in its slot until its outcome is written,
so that one that ran but was not yet recorded still counts as started after a crash.

A message through the pipe for each job cost a pickle and a write in the worker, and a
wake-up, a read and an unpickle in the supervisor: for a short job, a large share of
the CPU the worker itself spent on it. Here a job's start is three stores into shared memory, and the
supervisor reads the slots once a tick.

This module imports only the standard library: a spawned worker unpickles its table
before Django is set up (see ``bootstrap``)."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from typing import Any

#: What the timeout slot of a job holds once its attempt has returned.
_RAN = -1.0


@dataclass(frozen=True)
class Started:
    """A job in a slot, as the supervisor reads it."""

    #: When it started, by ``time.monotonic()`` (one clock for every process of a machine).
    began: float
    #: Its timeout in seconds; None when it has none.
    timeout: float | None
    #: False once its attempt returned: it ran, and waits for its outcome to be written.
    running: bool


class StartedJobs:
    """The slots of one worker process: made by the supervisor, passed to the process
    when it is spawned, written by the process's job threads and read by the supervisor.

    A slot's job id is written after its times and cleared after its outcome is
    written; 0 is an empty slot. The supervisor reads without a lock, so it may see a
    slot that is being written: it acts on a timeout only when it read the same job
    with the same start on its previous tick as well (see :meth:`stable`)."""

    def __init__(self, context: BaseContext, capacity: int) -> None:
        self.capacity = capacity
        self._ids = context.RawArray("q", capacity)
        self._began = context.RawArray("d", capacity)
        self._timeouts = context.RawArray("d", capacity)
        self._slots: dict[int, int] = {}  # the worker's own: each held job's slot
        self._free = list(range(capacity - 1, -1, -1))
        self._lock = threading.Lock()
        self._seen: dict[int, Started] = {}  # the supervisor's own: its previous read

    def __getstate__(self) -> dict[str, Any]:
        # The shared arrays travel to the spawned process; neither side's own state does.
        return {"capacity": self.capacity, "_ids": self._ids, "_began": self._began, "_timeouts": self._timeouts}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._slots = {}
        self._free = list(range(self.capacity - 1, -1, -1))
        self._lock = threading.Lock()
        self._seen = {}

    # The worker's side.

    def start(self, job_id: int, timeout: float | None) -> None:
        """Say that ``job_id`` starts now (called by the thread that runs it)."""
        with self._lock:
            if not self._free:
                raise RuntimeError(f"more jobs started than the {self.capacity} a batch may hold")
            slot = self._slots[job_id] = self._free.pop()
        self._began[slot] = time.monotonic()
        self._timeouts[slot] = math.inf if timeout is None else timeout
        self._ids[slot] = job_id

    def ran(self, job_id: int) -> None:
        """Say that the attempt of ``job_id`` returned: no timeout or grace applies to it now."""
        self._timeouts[self._slots[job_id]] = _RAN

    def recorded(self, job_ids: list[int]) -> None:
        """Free the slots of ``job_ids`` (those it started), whose outcomes are written."""
        with self._lock:
            for job_id in job_ids:
                slot = self._slots.pop(job_id, None)
                if slot is not None:
                    self._ids[slot] = 0
                    self._free.append(slot)

    # The supervisor's side.

    def held(self) -> dict[int, Started]:
        """Every job started and not recorded, by id."""
        held = {}
        for slot in range(self.capacity):
            job_id = self._ids[slot]
            if job_id:
                timeout = self._timeouts[slot]
                held[job_id] = Started(
                    began=self._began[slot],
                    timeout=None if timeout in (math.inf, _RAN) else timeout,
                    running=timeout != _RAN,
                )
        return held

    def stable(self) -> dict[int, Started]:
        """The running jobs read the same on this call and the previous one: a slot
        being written while it was read is left for the next tick."""
        now = {job_id: started for job_id, started in self.held().items() if started.running}
        stable = {job_id: started for job_id, started in now.items() if self._seen.get(job_id) == started}
        self._seen = now
        return stable
