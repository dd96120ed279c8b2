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
    #: Recycle the process once it has run this many jobs (``--max-jobs-per-process``).
    max_jobs_per_process: int | None = None
    #: Recycle the process once its resident memory passes this many MiB (``--max-memory``).
    max_memory: int | None = None
    #: Record the job metrics (``runworkers --metrics-port``, or ``PROMETHEUS_MULTIPROC_DIR`` set).
    metrics: bool = False
    #: ``text`` (the project's ``LOGGING`` as it is) or ``json`` (``--log-format``).
    log_format: str = "text"
