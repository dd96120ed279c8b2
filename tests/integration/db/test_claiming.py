"""Claims from separate processes, all at once (``db/claiming.py`` under contention):
every job is claimed by exactly one claimer and finished once."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from typing import Any

import pytest

from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import ROOT
from tests.testapp.tasks import noop

JOBS = 5000
CLAIMERS = 4
BATCH = 50


def start_claimers(python: str, env: dict[str, str]) -> list[subprocess.Popen[str]]:
    """Start every claimer and wait until each has set Django up and connected."""
    children = [
        subprocess.Popen(
            [python, "-m", "tests.support.claimer", f"claimer-{number}", str(BATCH)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for number in range(CLAIMERS)
    ]
    for child in children:
        assert child.stdout is not None
        if (line := child.stdout.readline()) != "ready\n":
            out, err = child.communicate(timeout=30)
            pytest.fail(f"a claimer did not start: {line + out!r}\n{err}")
    return children


@pytest.mark.slow
def test_concurrent_claimers_take_every_job_exactly_once(child_env: dict[str, str], python: str) -> None:
    jobs = Job.objects.enqueue_many(Job.objects.build(noop, (index,)) for index in range(JOBS))
    expected = {job.pk for job in jobs}
    assert len(expected) == JOBS

    children = start_claimers(python, child_env)
    try:
        for child in children:  # all at once: they really contend
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        outputs = [child.communicate(timeout=120) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()

    reports: dict[str, dict[str, Any]] = {}
    for number, (child, (out, err)) in enumerate(zip(children, outputs, strict=True)):
        assert child.returncode == 0, err
        assert "database is locked" not in err
        assert "Traceback" not in err
        reports[f"claimer-{number}"] = json.loads(out.splitlines()[-1])

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
