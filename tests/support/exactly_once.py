"""The proof of transactional completion under SIGKILL, for the suite (small) and at
scale: ``DB_BACKEND=postgres python -m tests.support.exactly_once --jobs 10000``.

Jobs each insert a receipt under a UNIQUE token (``tests.testapp.models.Receipt``,
which counts a run that finds its row already there), a few of them killing their worker
process after the insert the first time they run, while a real ``runworkers`` has a
random worker process SIGKILLed every so often. With ``@job(atomic=True)`` each row is
inserted by one run; without it, the runs repeated show. The script makes a test
database of its own for each run, and drops it."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # imported once Django is set up: it reads the settings as it loads
    from tests.support.workers import Workers

#: The share of jobs whose task kills its worker process after its insert, the first
#: time it runs: kills that land between a task's write and its outcome, whatever the
#: random kills hit.
DYING_EVERY = 50

WORKER_LOST = "django_sqlqueue.exceptions.WorkerLost"


class Tally(NamedTuple):
    """What a run left: each token's runs, the tokens whose job was rescued (its worker
    killed while it ran), and the tokens of the jobs that killed their own worker."""

    runs: dict[str, int]
    rescued: set[str]
    dying: set[str]
    kills: int

    @property
    def repeated(self) -> dict[str, int]:
        """The rows a second run found already there: the duplicates ``atomic`` prevents."""
        return {token: times for token, times in self.runs.items() if times > 1}


def dying(count: int) -> set[int]:
    return set(range(DYING_EVERY // 2, count, DYING_EVERY))


def enqueue(count: int, *, atomic: bool, pause: float, markers: Path) -> None:
    """``count`` jobs inserting ``token-0`` … receipts, atomically or not."""
    from django_sqlqueue.models import Job
    from tests.testapp.tasks import insert_receipt, insert_receipt_atomically

    task = insert_receipt_atomically if atomic else insert_receipt
    dies = dying(count)
    Job.objects.enqueue_many(
        Job.objects.build(
            task, (f"token-{n}",), {"pause": pause, "die_once": str(markers / f"died-{n}") if n in dies else ""}
        )
        for n in range(count)
    )


def drain_under_kills(workers: Workers, *, every: float, timeout: float, fail: Callable[[str], Any]) -> int:
    """Wait until no job is ready or running, SIGKILLing one of ``workers``' processes
    at random ``every`` seconds; ``fail(why)`` past ``timeout``. How many were killed."""
    from django_sqlqueue.models import Job, JobStatus
    from tests.support.workers import children_of

    kills = 0
    deadline = time.monotonic() + timeout
    while Job.objects.filter(status__in=[JobStatus.READY, JobStatus.RUNNING]).exists():
        if time.monotonic() > deadline:
            fail(f"jobs unfinished after {timeout} s and {kills} kills:\n{workers.text()}")
        if pids := children_of(workers.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(random.choice(pids), signal.SIGKILL)
                kills += 1
        time.sleep(every)
    return kills


def tally(count: int, kills: int) -> Tally:
    from django_sqlqueue.models import Job
    from tests.testapp.models import Receipt

    rescued = {
        job.args[0]
        for job in Job.objects.only("args", "errors")
        if any(error["exception_class_path"] == WORKER_LOST for error in job.errors)
    }
    runs = dict(Receipt.objects.values_list("token", "runs"))
    return Tally(runs, rescued, {f"token-{n}" for n in dying(count)}, kills)


def _run(count: int, atomic: bool, every: float, python: str, work: Path) -> dict[str, Any]:
    from django.db import connection

    from django_sqlqueue.models import Job, JobStatus
    from tests.support.workers import FAST_CLOCKS, KEEP_FINISHED, Workers
    from tests.testapp.models import Receipt

    Job.objects.all().delete()
    Receipt.objects.all().delete()
    markers = work / ("atomic" if atomic else "plain")
    markers.mkdir()
    began = time.monotonic()
    enqueue(count, atomic=atomic, pause=0.002, markers=markers)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DB_NAME": str(connection.settings_dict["NAME"]),
        # The retries' clocks, not the lease's: a SIGKILLed process's jobs are rescued by
        # its supervisor at once, and a short lease on a busy machine rescues live ones too.
        **{name: value for name, value in FAST_CLOCKS.items() if "HEARTBEAT" not in name and "LEASE" not in name},
        **KEEP_FINISHED,
    }
    workers = Workers(["--processes", "2", "--threads", "2"], env, python, markers / "runworkers.log")
    try:
        kills = drain_under_kills(workers, every=every, timeout=3600, fail=sys.exit)
        workers.stop()
    finally:
        if workers.process.poll() is None:
            workers.kill()
    seconds = time.monotonic() - began
    result = tally(count, kills)
    return {
        "atomic": atomic,
        "jobs": count,
        "successful": Job.objects.filter(status=JobStatus.SUCCESSFUL).count(),
        "rows": len(result.runs),
        "rows_missing": count - len(result.runs),
        "rows_inserted_again": len(result.repeated),
        "extra_runs": sum(result.repeated.values()) - len(result.repeated),
        "kills": kills,
        "jobs_rescued": len(result.rescued),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--kill-every", type=float, default=2.0, help="Seconds between SIGKILLs (default 2).")
    options = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    os.environ.setdefault("TOX_ENV_NAME", "exactly_once")
    os.environ.setdefault("TOX_ENV_DIR", tempfile.mkdtemp(prefix="exactly_once_"))
    import django

    django.setup()
    from django.db import connection

    name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        with tempfile.TemporaryDirectory() as work:
            for atomic in (True, False):
                figures = _run(options.jobs, atomic, options.kill_every, sys.executable, Path(work))
                print(json.dumps(figures), flush=True)
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)


if __name__ == "__main__":
    main()
