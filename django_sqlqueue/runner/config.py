"""What ``runworkers`` was asked to do, in one dataclass: the command builds it from its
options, the supervisor keeps it and gives each worker process a copy with the process's
own name. A spawned process unpickles it before Django is set up, so this module
imports nothing that needs models."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from django_sqlqueue.logs import LOG_FORMATS


@dataclass(frozen=True, kw_only=True)
class WorkerOptions:
    """The options of ``runworkers``, checked as they are made (``ValueError``): the
    command's argument types refuse the same values with a message for the command
    line, so only a caller that builds its own meets these."""

    queues: list[str] | None
    threads: int
    batch_size: int
    burst: bool
    log_level: int
    processes: int = 1
    #: Exit once this many jobs have finished, all processes together (``--max-jobs``).
    max_jobs: int | None = None
    #: The start of every worker's name (``--name``).
    name_prefix: str = ""
    #: One worker process's own name: set on the copy each process gets (:meth:`for_process`).
    name: str = ""
    #: Recycle the process once it has run this many jobs (``--max-jobs-per-process``).
    max_jobs_per_process: int | None = None
    #: Recycle the process once its resident memory passes this many MiB (``--max-memory``).
    max_memory: int | None = None
    #: Record the job metrics (``runworkers --metrics-port``, or ``PROMETHEUS_MULTIPROC_DIR`` set).
    metrics: bool = False
    #: ``text`` (the project's ``LOGGING`` as it is) or ``json`` (``--log-format``).
    log_format: str = "text"

    def __post_init__(self) -> None:
        counts = {"processes": self.processes, "threads": self.threads, "batch_size": self.batch_size}
        optional = {
            "max_jobs": self.max_jobs,
            "max_jobs_per_process": self.max_jobs_per_process,
            "max_memory": self.max_memory,
        }
        counts.update({key: value for key, value in optional.items() if value is not None})
        if wrong := [f"{key}={value!r}" for key, value in counts.items() if value < 1]:
            raise ValueError(f"runworkers options must be at least 1: {', '.join(wrong)}.")
        if self.log_format not in LOG_FORMATS:
            raise ValueError(f"log_format={self.log_format!r} is none of {LOG_FORMATS}.")

    def for_process(self, name: str) -> WorkerOptions:
        """The copy one worker process gets, named ``name``."""
        return dataclasses.replace(self, name=name)
