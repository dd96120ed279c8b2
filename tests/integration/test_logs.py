"""``runworkers --log-format json``: the supervisor's and the worker processes' logs as
JSON lines on stderr."""

from __future__ import annotations

import json
import subprocess

from django_sqlqueue.models import Job
from tests.support.workers import FAST_CLOCKS, KEEP_FINISHED, ROOT
from tests.testapp.tasks import add, fail


def test_every_stderr_line_is_json_and_a_finished_job_s_has_its_fields(child_env: dict[str, str], python: str) -> None:
    done = Job.objects.enqueue(add, (1, 2))
    failed = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    run = subprocess.run(
        [python, "manage.py", "runworkers", "--burst", "--processes", "2", "--log-format", "json", "-v", "2"],
        cwd=ROOT,
        env={**child_env, **FAST_CLOCKS, **KEEP_FINISHED},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    entries = [json.loads(line) for line in run.stderr.splitlines()]
    assert all({"timestamp", "level", "logger", "message"} <= entry.keys() for entry in entries)
    assert any(entry["message"].startswith("Started worker ") for entry in entries)
    jobs = {entry["job_id"]: entry for entry in entries if "job_id" in entry}
    assert {key: jobs[done.pk][key] for key in ("task", "queue", "attempt", "outcome", "level")} == {
        "task": "tests.testapp.tasks.add",
        "queue": "default",
        "attempt": 1,
        "outcome": "succeeded",
        "level": "INFO",
    }
    assert 0 <= jobs[done.pk]["duration"] < 60
    assert (jobs[failed.pk]["outcome"], jobs[failed.pk]["task"]) == ("failed", "testapp.fail")
    assert jobs[failed.pk]["message"].endswith(": RuntimeError: boom")
    assert run.stdout.startswith("runworkers: 2 process(es)")  # what the command says stays text, on stdout
