"""The jobs' manager's verbs on jobs once written (cancel, retry, run now, delete, a
finish the runner decided), and that they are the one door: the runner, the rescue,
the admin and the testing helpers write jobs through them only."""

from __future__ import annotations

import ast
import datetime
from pathlib import Path

import pytest
from django.utils import timezone

import django_sqlqueue
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules import failures
from tests.support.admin_helpers import make_job
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db


def test_cancel_by_ids_and_by_queryset() -> None:
    ready = make_job(JobStatus.READY)
    running = make_job(JobStatus.RUNNING, worker="w")
    failed = make_job(JobStatus.FAILED)
    assert Job.objects.cancel([ready.pk, running.pk, failed.pk]) == (1, 1)
    ready.refresh_from_db()
    running.refresh_from_db()
    assert (ready.status, ready.finished_at is not None, ready.cancel_requested_at) == (
        JobStatus.CANCELLED,
        True,
        None,
    )
    assert (running.status, running.cancel_requested_at is not None) == (JobStatus.RUNNING, True)
    assert Job.objects.get(pk=failed.pk).status == JobStatus.FAILED
    # Asked once: the first request's time stays.
    assert Job.objects.cancel(Job.objects.all()) == (0, 0)
    assert Job.objects.get(pk=running.pk).cancel_requested_at == running.cancel_requested_at


def test_cancel_of_nothing() -> None:
    assert Job.objects.cancel([]) == (0, 0)
    assert Job.objects.cancel(Job.objects.none()) == (0, 0)


def test_retry_gives_failed_and_cancelled_jobs_a_fresh_start_and_leaves_the_others() -> None:
    failed = make_job(JobStatus.FAILED, errors=3, worker="w", end_reason="expired")
    cancelled = make_job(JobStatus.CANCELLED)
    running = make_job(JobStatus.RUNNING, worker="w", errors=1)
    retried = Job.objects.retry([failed, cancelled, running])
    assert (retried.held, retried.dependents) == ({}, 0)
    rows = {job.pk: job for job in Job.objects.all()}
    assert [(rows[job.pk].status, rows[job.pk].attempts) for job in (failed, cancelled, running)] == [
        (JobStatus.READY, 0),
        (JobStatus.READY, 0),
        (JobStatus.RUNNING, 1),
    ]
    assert (rows[failed.pk].worker, rows[failed.pk].end_reason, len(rows[failed.pk].errors)) == ("", "", 3)


def test_retry_leaves_a_job_whose_unique_key_another_active_job_holds() -> None:
    failed = make_job(JobStatus.FAILED, unique_key="report")
    free = make_job(JobStatus.FAILED, unique_key="other")
    make_job(JobStatus.READY, unique_key="report")
    retried = Job.objects.retry([failed, free])
    assert retried.held == {failed.pk: "report"}
    assert (Job.objects.get(pk=failed.pk).status, Job.objects.get(pk=free.pk).status) == (
        JobStatus.FAILED,
        JobStatus.READY,
    )


def test_run_now_brings_forward_ready_jobs_due_later_only() -> None:
    later = timezone.now() + datetime.timedelta(hours=1)
    waiting = Job.objects.enqueue(noop, run_at=later)
    failed = make_job(JobStatus.FAILED, run_at=later)
    assert Job.objects.run_now(Job.objects.all()) == 1
    assert Job.objects.get(pk=waiting.pk).run_at < later
    assert Job.objects.get(pk=failed.pk).run_at == later


def test_delete_jobs_keeps_the_jobs_a_worker_holds() -> None:
    ready = make_job(JobStatus.READY)
    running = make_job(JobStatus.RUNNING, worker="w")
    assert Job.objects.delete_jobs([ready.pk, running.pk]) == 1
    assert list(Job.objects.values_list("pk", flat=True)) == [running.pk]


def test_finish_as_decided_writes_the_failure_as_the_runner_decided_it() -> None:
    Job.objects.enqueue(noop)
    (job,) = Job.objects.claim(worker_id="w")
    failure = failures.decide(job, ValueError("boom"), "w")
    (ended,) = Job.objects.finish_as_decided(worker_id="w", succeeded={}, failed={job: failure})
    assert ended.job == job
    assert Job.objects.get(pk=job.pk).errors[-1]["message"] == "boom"
    # Fenced: another worker's finish writes nothing.
    assert Job.objects.finish_as_decided(worker_id="other", succeeded={job: None}, failed={}) == []


#: The rooms that change jobs only through the manager's verbs (the benchmark, which
#: empties its own queue, aside).
_THROUGH_THE_DOOR = ("admin", "runner", "maintenance", "testing.py", "backends", "operations.py")
#: The statements those verbs are made of, which those rooms never call themselves.
_STATEMENTS = {
    "django_sqlqueue.db.lifecycle": {"written", "written_case"},
    "django_sqlqueue.db.keys.unique": {"update_each", "write", "insert_unique"},
    "django_sqlqueue.db.finishing": {"finish", "release"},
    "django_sqlqueue.db.dependents": {"wait_again", "retry_dependents"},
    "django_sqlqueue.db.dependencies": {"forget", "settle", "settle_cancelled", "settle_finished"},
}
#: What writes rows when called on a queryset of jobs.
_WRITES = {"update", "delete", "bulk_update", "bulk_create", "create", "save", "update_or_create"}


def _modules() -> list[Path]:
    package = Path(django_sqlqueue.__file__).parent
    return [path for room in _THROUGH_THE_DOOR for path in sorted((package / room).glob("**/*.py")) or [package / room]]


def _door_problems(path: Path) -> list[str]:
    """Where ``path`` writes jobs other than through the manager's verbs: a statement
    imported or called by its module's name, a private verb of a manager, or a write
    on a queryset that starts at ``Job``."""
    tree = ast.parse(path.read_text(), str(path))
    modules = {
        alias.asname or alias.name: f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (names := _STATEMENTS.get(node.module or "")):
            problems += [f"imports {node.module}.{alias.name}" for alias in node.names if alias.name in names]
        if not isinstance(node, ast.Attribute):
            continue
        if isinstance(node.value, ast.Name) and node.attr in _STATEMENTS.get(modules.get(node.value.id, ""), ()):
            problems.append(f"calls {node.value.id}.{node.attr}")
        if isinstance(node.value, ast.Attribute) and node.value.attr == "objects" and node.attr.startswith("_"):
            problems.append(f"calls the private objects.{node.attr}")
        if node.attr in _WRITES and _starts_at_job(node.value):
            problems.append(f"writes Job rows with .{node.attr}()")
    return [f"{path.name}:{problem}" for problem in problems]


def _starts_at_job(node: ast.expr) -> bool:
    while isinstance(node, (ast.Attribute, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id == "Job"


def test_the_runner_the_rescue_the_admin_and_the_testing_helpers_write_jobs_through_the_managers_verbs() -> None:
    assert [problem for path in _modules() for problem in _door_problems(path)] == []


def test_the_door_check_sees_a_write_that_goes_around_it(tmp_path: Path) -> None:
    module = tmp_path / "around.py"
    module.write_text(
        "from django_sqlqueue.db import finishing\n"
        "from django_sqlqueue.db.lifecycle import written\n"
        "finishing.finish(jobs)\n"
        "Job.objects._finish_decided(worker_id='w')\n"
        "Job.objects.filter(pk=1).update(status='READY')\n"
    )
    assert _door_problems(module) == [
        "around.py:imports django_sqlqueue.db.lifecycle.written",
        "around.py:calls finishing.finish",
        "around.py:calls the private objects._finish_decided",
        "around.py:writes Job rows with .update()",
    ]
