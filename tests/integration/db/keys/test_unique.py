"""Unique jobs from separate processes, all at once (``db/uniqueness.py`` under
contention): the database's unique index lets exactly one active job hold a key."""

from __future__ import annotations

from django_sqlqueue.models import Job, JobStatus
from tests.support.together import run_together

PROCESSES = 8
ENQUEUES = 200
KEY = "order-42"


def test_eight_processes_enqueue_one_key_and_one_job_holds_it(child_env: dict[str, str], python: str) -> None:
    """Odd processes roll each enqueue back: a holder that never commits must not make
    the others skip the key, so the committing ones write exactly one job among them."""
    modes = ["commit" if number % 2 == 0 else "rollback" for number in range(PROCESSES)]
    commands = [[python, "-m", "tests.support.uniquer", KEY, str(ENQUEUES), mode] for mode in modes]
    reports = run_together(commands, child_env)
    (holder,) = Job.objects.filter(unique_key=KEY)
    committed = [report for report, mode in zip(reports, modes, strict=True) if mode == "commit"]
    assert sum(report["created"] for report in committed) == 1
    assert all(report["ids"] == [holder.pk] for report in committed), committed

    # Once its job has run, the key is free again.
    claimed = Job.objects.claim(worker_id="w")
    assert [job.pk for job in claimed] == [holder.pk]
    assert Job.objects.enqueue("tests.testapp.tasks.noop", unique_key=KEY).pk == holder.pk
    assert Job.objects.finish(worker_id="w", succeeded={claimed[0]: None}) == 1
    again = Job.objects.enqueue("tests.testapp.tasks.noop", unique_key=KEY)
    assert again.created
    assert again.pk != holder.pk
    assert Job.objects.filter(unique_key=KEY, status__in=[JobStatus.READY, JobStatus.RUNNING]).count() == 1
