"""Features where they meet, as a stateful property test: Hypothesis interleaves
enqueues (``after=``, chains, chords, batches with callbacks, unique keys, snoozes,
expiry, failures), cancels, pauses, the admin's two retries, pruning and real
``runworkers`` processes (drains under every retention, with raising enqueue hooks and
signal receivers, and workers SIGKILLed mid-run), and checks after every step what
must hold whatever came before:

- no job runs before the jobs it waits for have finished, nor (unless it runs after
  failures, or a person retried it) after one failed, was cancelled or was deleted
  without having succeeded (the ``step`` task notes what it sees as it runs);
- no job is cancelled for its parents unless one of them failed, was cancelled or was
  deleted unfinished; none waits for parents that have all finished;
- each run of a job's task is one claim of it (its runs are at most its recorded
  attempts and snoozes, plus the one it is on);
- an atomic step (``@job(atomic=True)``) leaves its notes once, with its success, and
  none for a run that failed, snoozed or was killed, whatever the retention, the
  workflow, the unique key, the raising hooks or the admin's retries around it;
- after a drain, every job has ended or is not yet due; at the end, every job has
  ended or still waits for a job that has not, and every finished batch ran its
  callback;
- what the admin's retries say they did matches the rows.

Bounded for CI: ``SQLQUEUE_TOGETHER_EXAMPLES`` examples (default 6) of up to
``SQLQUEUE_TOGETHER_STEPS`` steps (default 12) each, on the database under test."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.db.models import Q
from django.test import Client
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from django_sqlqueue import pause_queue, resume_queue, workflows
from django_sqlqueue.db.clock import database_now
from django_sqlqueue.models import Job, JobBatch, JobDependency, JobStatus, PausedQueue, Worker
from django_sqlqueue.operations import cancel_jobs
from tests.support.admin_helpers import action, messages_of
from tests.support.workers import FAST_CLOCKS, Workers, wait_until
from tests.testapp.models import Receipt
from tests.testapp.tasks import batch_done, step, step_atomically

pytestmark = pytest.mark.slow

QUEUE = "default"
FINISHED = (JobStatus.SUCCESSFUL, JobStatus.FAILED, JobStatus.CANCELLED)
ACTIVE = (JobStatus.WAITING, JobStatus.READY, JobStatus.RUNNING)
#: Every status kept; successes deleted at once; every end deleted at once.
RETENTIONS = (
    {"SUCCESSFUL": None, "FAILED": None, "CANCELLED": None},
    {"SUCCESSFUL": 0, "FAILED": None, "CANCELLED": None},
    {"SUCCESSFUL": 0, "FAILED": 0, "CANCELLED": 0},
)
HOSTILE = {
    "SQLQUEUE_ENQUEUE_HOOKS": json.dumps(["tests.support.middleware.request_scoped"]),
    "SQLQUEUE_TEST_RAISING_RECEIVERS": "1",
}
MODES = ("ok", "ok", "fail", "snooze", "slow")


@dataclass(frozen=True)
class Spec:
    """What the test enqueued a job as."""

    mode: str
    parents: tuple[int, ...] = ()
    runs_anyway: bool = False
    #: Run by ``step_atomically``: its notes commit with its success, once.
    atomic: bool = False


class FeaturesTogether(RuleBasedStateMachine):
    """The machine; :func:`test_features_together` gives it its worker processes."""

    start_workers: Callable[..., Workers]

    jobs = Bundle("jobs")

    def __init__(self) -> None:
        super().__init__()
        self.specs: dict[int, Spec] = {}
        #: Jobs cancelled by the test itself (not for their parents), or expired.
        self.cancelled_by_us: set[int] = set()
        #: Jobs a person retried: they may run after a parent that failed.
        self.retried: set[int] = set()
        #: Jobs seen failed or cancelled at some step: their children may be cancelled.
        self.ended_badly: set[int] = set()
        #: Each batch's id and its ``on_finish`` callback's token.
        self.batches: dict[int, str] = {}
        self.paused = False
        self.serial = 0
        #: How many times the test has killed workers.
        self.kills = 0

    @initialize()
    def empty_tables(self) -> None:
        for model in (Job, JobDependency, JobBatch, PausedQueue, Worker, Receipt):
            model._base_manager.all().delete()
        user = get_user_model().objects.filter(username="together").first()
        if user is None:
            user = get_user_model().objects.create_superuser("together", password="x")
        self.admin = Client()
        self.admin.force_login(user)

    # Enqueueing.

    @rule(
        target=jobs,
        mode=st.sampled_from(MODES),
        parents=st.lists(jobs, max_size=2, unique=True),
        runs_anyway=st.booleans(),
        unique_key=st.sampled_from([None, None, "key-a", "key-b"]),
        expires=st.booleans(),
        atomic=st.booleans(),
    )
    def enqueue(
        self, mode: str, parents: list[int], runs_anyway: bool, unique_key: str | None, expires: bool, atomic: bool
    ) -> int:
        parents = [parent for parent in parents if Job.objects.filter(pk=parent).exists()]
        job = Job.objects.enqueue(
            step_atomically if atomic else step,
            _step_args(mode),
            after=parents,
            after_failure="run" if runs_anyway else "cancel",
            unique_key=unique_key,
            expires_in=1.5 if expires else None,
        )
        if job.created:
            self.specs[job.pk] = Spec(mode, tuple(parents), runs_anyway, atomic)
        return job.pk

    @rule(target=jobs, modes=st.lists(st.sampled_from(MODES), min_size=2, max_size=3))
    def chain(self, modes: list[str]) -> Any:
        steps = workflows.chain(Job.objects.build(step, _step_args(mode)) for mode in modes)
        for before, after, mode in zip([None, *steps], steps, modes, strict=False):
            self.specs[after.pk] = Spec(mode, () if before is None else (before.pk,))
        return multiple(*(job.pk for job in steps))

    @rule(target=jobs, modes=st.lists(st.sampled_from(MODES), min_size=1, max_size=3), final=st.sampled_from(MODES))
    def chord(self, modes: list[str], final: str) -> Any:
        group, then = workflows.chord(
            [Job.objects.build(step, _step_args(mode)) for mode in modes], Job.objects.build(step, _step_args(final))
        )
        for job, mode in zip(group, modes, strict=True):
            self.specs[job.pk] = Spec(mode)
        self.specs[then.pk] = Spec(final, tuple(job.pk for job in group))
        return multiple(*(job.pk for job in [*group, then]))

    @rule(target=jobs, modes=st.lists(st.sampled_from(MODES), min_size=1, max_size=3))
    def batch(self, modes: list[str]) -> Any:
        self.serial += 1
        token = f"end-{self.serial}"
        with Job.objects.batch(on_finish=(batch_done, (token,))) as batch:
            jobs = Job.objects.enqueue_many([Job.objects.build(step, _step_args(mode)) for mode in modes])
        self.batches[batch.pk] = token
        for job, mode in zip(jobs, modes, strict=True):
            self.specs[job.pk] = Spec(mode)
        return multiple(*(job.pk for job in jobs))

    # What people do.

    @rule(job=jobs)
    def cancel(self, job: int) -> None:
        cancel_jobs([job])
        self.cancelled_by_us.add(job)

    @rule(paused=st.booleans())
    def pause_or_resume(self, paused: bool) -> None:
        (pause_queue if paused else resume_queue)(QUEUE)
        self.paused = paused

    @rule(picked=st.lists(jobs, min_size=1, max_size=3, unique=True), with_dependents=st.booleans())
    def retry_in_the_admin(self, picked: list[int], with_dependents: bool) -> None:
        everything = dict(Job.objects.values_list("pk", "status"))
        before = {pk: everything[pk] for pk in picked if pk in everything}
        chosen = list(Job.objects.filter(pk__in=picked))
        if not chosen:  # all deleted since (retention 0, pruning): nothing to select
            return
        response = action(self.admin, "retry_with_dependents" if with_dependents else "retry", chosen)
        assert response.status_code == 302, response
        said = " ".join(messages_of(self.admin.get("/admin/django_sqlqueue/job/")))
        assert "database failed" not in said, said
        after = dict(Job.objects.filter(pk__in=picked).values_list("pk", "status"))
        retried = [pk for pk, status in before.items() if status in ("FAILED", "CANCELLED") and after[pk] in ACTIVE]
        done = re.search(r"Retried (\d+) jobs?\.", said)
        assert done is not None, said
        assert int(done[1]) == len(retried), (said, before, after)
        held = re.search(r"Left (\d+) jobs? as they were", said)
        left = int(held[1]) if held else 0
        eligible = sum(status in ("FAILED", "CANCELLED") for status in before.values())
        now = dict(Job.objects.values_list("pk", "status"))
        back = [pk for pk, status in everything.items() if status in ("FAILED", "CANCELLED") and now.get(pk) in ACTIVE]
        if with_dependents:
            # Those left as they were count the dependents whose key is held too.
            assert len(retried) + left >= eligible, (said, before, after)
            dependents = re.search(r"(\d+) jobs? their ends had cancelled wait for them again", said)
            assert (int(dependents[1]) if dependents else 0) == len(back) - len(retried), (said, everything, now)
        else:
            assert len(retried) + left == eligible, (said, before, after)
            assert sorted(back) == sorted(retried), (said, everything, now)
        self.retried.update(back)
        self.cancelled_by_us.difference_update(back)

    @rule(status=st.sampled_from(FINISHED))
    def prune(self, status: str) -> None:
        call_command("sqlqueue_prune", "--status", status, "--older-than", "0", "--duty-cycle", "100", verbosity=0)

    # Workers.

    @rule(retention=st.sampled_from(RETENTIONS), hostile=st.booleans())
    def drain(self, retention: Mapping[str, int | None], hostile: bool) -> None:
        """``runworkers --burst`` until it exits by itself: every job due as it started has run."""
        started = database_now(connection.alias)
        workers = self._workers("--burst", retention=retention, hostile=hostile)
        assert workers.wait(180) == 0, workers.text()
        if not self.paused:
            # One that expired meanwhile is the expiry sweep's to end, not a claim's to start.
            unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=database_now(connection.alias))
            due = Job.objects.filter(unexpired, status=JobStatus.READY, run_at__lte=started)
            assert not due.exists(), (list(due.values("pk", "run_at", "attempts")), workers.text())

    @rule(retention=st.sampled_from(RETENTIONS), hostile=st.booleans())
    def kill_mid_run(self, retention: Mapping[str, int | None], hostile: bool) -> None:
        """Workers SIGKILLed (supervisor and processes) once one has started a job, or
        after a few seconds."""
        workers = self._workers("--processes", "2", retention=retention, hostile=hostile)
        with contextlib.suppress(pytest.fail.Exception):
            wait_until(Job.objects.filter(status=JobStatus.RUNNING).exists, timeout=5)
        time.sleep(0.3)
        workers.kill()
        self.kills += 1

    def _workers(self, *args: str, retention: Mapping[str, int | None], hostile: bool) -> Workers:
        env = {**FAST_CLOCKS, "SQLQUEUE_RETENTION": json.dumps(retention), **(HOSTILE if hostile else {})}
        return self.start_workers(*args, **env)

    # What must hold.

    @invariant()
    def nothing_ran_out_of_order(self) -> None:
        for token in Receipt.objects.filter(token__startswith="early:").values_list("token", flat=True):
            pytest.fail(f"a job ran before a job it waits for had finished (child:parent): {token}")
        for token in Receipt.objects.filter(token__startswith="after-bad:").values_list("token", flat=True):
            child = int(token.split(":")[1])
            assert child in self.retried, f"a job ran after a job it waits for failed (child:parent): {token}"

    @invariant()
    def children_cancelled_only_for_their_parents(self) -> None:
        rows = {row["pk"]: row for row in Job.objects.values("pk", "status", "end_reason", "errors")}
        self.ended_badly.update(pk for pk, row in rows.items() if row["status"] in ("FAILED", "CANCELLED"))
        done = set(_counts("done:"))
        for pk, row in rows.items():
            spec = self.specs.get(pk)
            if spec is None or row["status"] != JobStatus.CANCELLED or pk in self.cancelled_by_us:
                continue
            if row["end_reason"] == "expired":
                continue
            bad = [p for p in spec.parents if p in self.ended_badly or (p not in rows and p not in done)]
            assert bad, f"job {pk} was cancelled although every job it waits for succeeded: {row}, {spec}"

    @invariant()
    def no_job_waits_for_finished_parents(self) -> None:
        statuses = dict(Job.objects.values_list("pk", "status"))
        for pk in Job.objects.filter(status=JobStatus.WAITING).values_list("pk", flat=True):
            spec = self.specs.get(pk)
            if spec is None:
                continue
            unfinished = [p for p in spec.parents if statuses.get(p) in ACTIVE]
            assert unfinished, f"job {pk} waits, yet every job it waits for has finished or is gone: {spec}"

    @invariant()
    def each_run_is_a_claim(self) -> None:
        runs = _counts("ran:")
        snoozed = _counts("snoozed:")
        for pk, errors in Job.objects.filter(pk__in=list(runs)).values_list("pk", "errors"):
            assert runs[pk] <= len(errors) + snoozed.get(pk, 0) + 1, (pk, runs[pk], errors)

    @invariant()
    def atomic_steps_leave_their_notes_once_with_their_success(self) -> None:
        """An atomic step's notes (``ran:``, ``done:``) commit with its success, in one
        transaction: none for a run that failed, snoozed or was killed, and one run
        noted at most, however often it ran, was rescued or retried in the admin."""
        # The notes read in one query, before the statuses: a success committed between
        # the two reads shows as notes missing, never as notes without their success.
        notes = _counts("")
        statuses = dict(Job.objects.filter(pk__in=list(self.specs)).values_list("pk", "status"))
        for pk, spec in self.specs.items():
            if not spec.atomic:
                continue
            runs, done = notes.get(f"ran:{pk}", 0), notes.get(f"done:{pk}", 0)
            assert runs == done <= 1, (pk, spec, runs, done)
            if statuses.get(pk) in (*ACTIVE, JobStatus.FAILED, JobStatus.CANCELLED) or spec.mode == "fail":
                assert not runs, (pk, spec, statuses.get(pk))

    @invariant()
    def attempts_fail_only_as_asked(self) -> None:
        """A step fails only when its mode says so, or when the test killed its worker:
        never because user code around it raised."""
        for pk, errors in Job.objects.filter(pk__in=list(self.specs)).values_list("pk", "errors"):
            lost = [error for error in errors if error["exception_class_path"].endswith(".WorkerLost")]
            assert len(lost) <= self.kills, f"job {pk} lost its worker {len(lost)} times, the test killed {self.kills}"
            asked = [error for error in errors if error["message"].endswith("fails, as asked")]
            if self.specs[pk].mode != "fail":
                assert not asked, (pk, errors)
            # A cancelled dependent's record of why.
            cancelled = [error for error in errors if error["exception_class_path"].endswith(".DependencyFailed")]
            others = [error for error in errors if error not in [*lost, *asked, *cancelled]]
            assert not others, f"job {pk} failed for another reason: {others}"

    def teardown(self) -> None:
        """Workers once more, past the lease (so that what the kills left is rescued),
        until nothing is due: then every job has ended or waits for one that has not."""
        resume_queue(QUEUE)
        self.paused = False
        workers = self._workers("--processes", "2", retention=RETENTIONS[0], hostile=False)
        try:
            time.sleep(float(FAST_CLOCKS["SQLQUEUE_LEASE"]) + 1)
            wait_until(_settled, timeout=120, why=lambda: f"{_unsettled()}\n{workers.text()}")
        finally:
            if workers.process.poll() is None:
                assert workers.stop() == 0, workers.text()
        self.no_job_waits_for_finished_parents()
        ran = _counts("")
        for batch in JobBatch.objects.filter(pk__in=list(self.batches), finished_at__isnull=False):
            assert ran.get(self.batches[batch.pk], 0) >= 1, f"finished batch {batch.pk}'s callback never ran"


def _step_args(mode: str) -> tuple[Any, ...]:
    return ("ok", 0.5) if mode == "slow" else (mode,)


def _counts(prefix: str) -> dict[Any, int]:
    """The receipts' runs by what follows ``prefix`` (a job's id, where one follows)."""
    found: dict[Any, int] = {}
    for token, runs in Receipt.objects.filter(token__startswith=prefix).values_list("token", "runs"):
        key = token[len(prefix) :]
        found[int(key) if key.isdigit() else key] = runs
    return found


def _unsettled() -> list[Any]:
    """Jobs that are running, due, or waiting for parents that have all finished."""
    active = set(Job.objects.filter(status__in=ACTIVE).values_list("pk", flat=True))
    stuck: list[Any] = []
    for row in Job.objects.filter(status__in=ACTIVE).values("pk", "status", "run_at", "task"):
        if row["status"] == JobStatus.RUNNING or row["status"] == JobStatus.READY:
            stuck.append(row)
        else:
            parents = JobDependency.objects.filter(child_id=row["pk"]).values_list("parent_id", flat=True)
            if not set(parents) & active:
                stuck.append(row)
    return stuck


def _settled() -> bool:
    return not _unsettled()


def test_features_together(start_workers: Callable[..., Workers]) -> None:
    FeaturesTogether.start_workers = staticmethod(start_workers)
    run_state_machine_as_test(
        FeaturesTogether,
        settings=settings(
            max_examples=int(os.environ.get("SQLQUEUE_TOGETHER_EXAMPLES", "6")),
            stateful_step_count=int(os.environ.get("SQLQUEUE_TOGETHER_STEPS", "12")),
            deadline=None,
            suppress_health_check=list(HealthCheck),
            # Real processes are not deterministic: a failure replayed may strike at
            # another step, so the steps are reported as found, not shrunk.
            phases=[Phase.explicit, Phase.generate],
            database=None,
        ),
    )
