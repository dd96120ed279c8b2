"""The real ``runworkers`` runs Django tasks: results, context, coroutines, failures
with their tracebacks in Django's task log, and rows naming no registered task."""

from __future__ import annotations

import subprocess
from typing import Any

from django_sqlqueue.exceptions import UnknownTaskError
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.tasks_compat import TaskResultStatus
from testproject.djtasks.tasks import add, async_double, fail, whoami
from tests.conftest import ROOT


def test_runworkers_runs_django_tasks(child_env: dict[str, str], python: str) -> None:
    summed, doubled, greeted, failed = (
        add.enqueue(2, 3),
        async_double.enqueue(4),
        whoami.enqueue("hi"),
        fail.enqueue("boom"),
    )
    Job.objects.filter(pk=failed.id).update(max_attempts=1)
    unknown = Job.objects.create(task="tests.poison.run", max_attempts=1, queue="default")

    done = subprocess.run(
        [python, "manage.py", "runworkers", "--burst", "--processes", "1"],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    for result in (summed, doubled, greeted, failed):
        result.refresh()
    worker = Job.objects.get(pk=summed.id).worker
    assert [(result.status, result.worker_ids) for result in (summed, doubled, greeted, failed)] == [
        (TaskResultStatus.SUCCESSFUL, [worker]),
        (TaskResultStatus.SUCCESSFUL, [worker]),
        (TaskResultStatus.SUCCESSFUL, [worker]),
        (TaskResultStatus.FAILED, [worker]),
    ]
    values: list[Any] = [summed.return_value, doubled.return_value, greeted.return_value]
    assert values == [
        5,
        [4, 8],
        {"label": "hi", "attempt": 1, "status": "RUNNING"},
    ]
    (error,) = failed.errors
    assert error.exception_class is ValueError
    assert error.traceback.endswith("raise ValueError(message)\nValueError: boom\n")
    # Django's task log reports the failure with its traceback, from the worker.
    assert f"Task id={failed.id} path=testproject.djtasks.tasks.fail state=FAILED\nTraceback" in done.stderr

    unknown.refresh_from_db()
    assert unknown.status == JobStatus.FAILED
    assert [(error["exception_class_path"], error["message"]) for error in unknown.errors] == [
        (
            f"{UnknownTaskError.__module__}.UnknownTaskError",
            "No task is registered as 'tests.poison.run'. Tasks are registered by @django_sqlqueue.job in a module "
            "that is imported: an installed app's tasks.py is imported for you.",
        )
    ]
