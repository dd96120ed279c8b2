"""What a supervisor tells its worker processes. A spawned process unpickles it before
Django is set up, so this module imports nothing that needs models."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerConfig:
    """What the supervisor tells each worker process."""

    name: str
    queues: list[str] | None
    threads: int
    batch_size: int
    burst: bool
    log_level: int
