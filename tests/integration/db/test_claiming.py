"""Claims from separate processes, all at once (``db/claiming.py`` under contention):
every job is claimed by exactly one claimer and finished once."""

from __future__ import annotations

from collections import Counter

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.together import run_together
from tests.testapp.tasks import noop

JOBS = 5000
CLAIMERS = 4
BATCH = 50


@pytest.mark.slow
def test_concurrent_claimers_take_every_job_exactly_once(child_env: dict[str, str], python: str) -> None:
    jobs = Job.objects.enqueue_many(Job.objects.build(noop, (index,)) for index in range(JOBS))
    expected = {job.pk for job in jobs}
    assert len(expected) == JOBS

    commands = [[python, "-m", "tests.support.claimer", f"claimer-{number}", str(BATCH)] for number in range(CLAIMERS)]
    reports = {f"claimer-{number}": report for number, report in enumerate(run_together(commands, child_env))}

    claimed = Counter(pk for report in reports.values() for pk in report["ids"])
    assert set(claimed) == expected
    assert [pk for pk, times in claimed.items() if times > 1] == []
    assert sum(claimed.values()) == JOBS
    # More than one claimer got work: they ran side by side, not one after another.
    assert sum(1 for report in reports.values() if report["ids"]) > 1, reports

    assert Job.objects.exclude(status=JobStatus.SUCCESSFUL).count() == 0
    owner = {pk: worker for worker, report in reports.items() for pk in report["ids"]}
    stored = {
        pk: (worker, result, attempts)
        for pk, worker, result, attempts in Job.objects.values_list("pk", "worker", "result", "attempts")
    }
    assert stored == {pk: (owner[pk], owner[pk], 1) for pk in expected}
