"""The supervisor keeps the lease of the jobs its live worker processes run.

A task that holds the GIL in one long C call (``sum(range(10**9))``, a catastrophic
regex, a huge sort) stops every other thread of its process, the heartbeat's too: past
``SQLQUEUE_LEASE`` the job was rescued while it ran, and ran again elsewhere. The
supervisor is another process, and knows that its child is alive and which jobs it
started (``started.py``): it beats for the child when the child's own beat is late.

It does not for a process that is stopped (SIGSTOP, a debugger): a frozen worker runs
nothing, and its jobs must be rescued as a dead worker's are."""

from __future__ import annotations

import datetime
from collections.abc import Collection
from pathlib import Path

from django.db.models import Exists, OuterRef

from django_sqlqueue.conf import conf
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.expressions import PrimaryKeyIn
from django_sqlqueue.models import Job, JobStatus, Worker

#: The states of a stopped process in ``/proc/PID/stat``: by a signal, or by a tracer.
_STOPPED = frozenset("Tt")


def keep_lease(name: str, job_ids: Collection[int]) -> bool:
    """Renew the heartbeat of worker ``name`` by the database's clock, when it is late
    (none for two heartbeat intervals) and the worker still holds one of ``job_ids``
    (the jobs it started; a worker's name is its process's alone, so a job still
    ``RUNNING`` for it is the attempt it started): a worker whose jobs were rescued, or
    whose row is gone, is not kept. Whether it was renewed."""
    late = DatabaseNow() - datetime.timedelta(seconds=2 * conf.SQLQUEUE_HEARTBEAT_INTERVAL)
    holding = Job.objects.on_queue_db().filter(PrimaryKeyIn(job_ids), status=JobStatus.RUNNING, worker=OuterRef("name"))
    late_beats = Worker.objects.filter(Exists(holding), name=name, heartbeat_at__lt=late)
    return bool(late_beats.update(heartbeat_at=DatabaseNow()))


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP, SIGTSTP, a debugger), from Linux's
    ``/proc``; False where there is none (a stopped worker is then kept while its
    started jobs are within their timeouts) or when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] in _STOPPED
