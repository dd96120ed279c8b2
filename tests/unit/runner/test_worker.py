"""One worker process's pieces, run in the test process: a job's run, its signals,
the recording of outcomes, and how big a batch it claims."""

from __future__ import annotations

import contextlib
import datetime
import logging
import multiprocessing
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import DatabaseError, InterfaceError, connection, connections
from django.utils import timezone

from django_sqlqueue import signals
from django_sqlqueue.db.engines.errors import is_unavailable
from django_sqlqueue.managers import JobManager
from django_sqlqueue.models import Job, JobStatus, Worker
from django_sqlqueue.runner.config import WorkerOptions
from django_sqlqueue.runner.execution import JobOutcome
from django_sqlqueue.runner.started import StartedJobs
from django_sqlqueue.runner.worker import BATCH_SECONDS, Budget, WorkerProcess
from tests.support.severed import needs_a_server, sever_outcome_writes
from tests.support.workers import wait_until
from tests.support.zones import SERVER_ZONES, zones
from tests.testapp.tasks import add, batch_done, fail, snooze

pytestmark = pytest.mark.django_db(transaction=True)

#: How far apart two reads of "now" may be: the test's own statements in between.
CLOSE = datetime.timedelta(seconds=5)


@contextlib.contextmanager
def worker_process(**config: Any) -> Iterator[WorkerProcess]:
    """A worker process's loop in this process, with ``config`` over the defaults."""
    receiver, sender = multiprocessing.Pipe(duplex=False)
    defaults: dict[str, Any] = {"name": "w", "queues": None, "threads": 2, "batch_size": 100, "burst": True}
    settings = WorkerOptions(**{**defaults, "log_level": 0, **config})
    started = StartedJobs(multiprocessing.get_context(), settings.batch_size)
    yield WorkerProcess(settings, sender, started, Budget(None), threading.Event())
    receiver.close()
    sender.close()


@pytest.fixture
def process() -> Iterator[WorkerProcess]:
    with worker_process() as process:
        yield process


def claim_one(task: Any, *args: Any, **options: Any) -> Job:
    Job.objects.enqueue(task, args, **options)
    [job] = Job.objects.claim(worker_id="w")
    return job


def test_a_job_runs_and_its_outcome_is_recorded(process: WorkerProcess) -> None:
    job = claim_one(add, 2, 3)
    outcome = process.run_job(job)
    assert outcome == JobOutcome(job, result=5)
    process.record([outcome])
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.SUCCESSFUL, 5)


def test_a_job_is_in_its_slot_from_its_start_until_its_outcome_is_written(process: WorkerProcess) -> None:
    """What the supervisor reads: running while it runs (its timeout applies), then
    started but not running until its outcome is written (a crash charges it)."""
    during: list[dict[int, Any]] = []

    def started(sender: Any, job: Job, **kwargs: Any) -> None:
        during.append(process.started.held())

    job = claim_one(add, 2, 3, timeout=7)
    signals.job_started.connect(started)
    try:
        outcome = process.run_job(job)
    finally:
        signals.job_started.disconnect(started)
    [slots] = during
    assert (slots[job.pk].running, slots[job.pk].timeout) == (True, 7.0)
    assert process.started.held()[job.pk].running is False
    process.record([outcome])
    assert process.started.held() == {}


def test_signals_are_sent_around_each_job(process: WorkerProcess) -> None:
    seen: list[tuple[str, Any]] = []

    def started(sender: Any, job: Job, **kwargs: Any) -> None:
        seen.append(("started", job.pk))

    def finished(sender: Any, job: Job, result: Any, error: BaseException | None, **kwargs: Any) -> None:
        seen.append(("finished", (job.pk, result, type(error).__name__)))

    signals.job_started.connect(started)
    signals.job_finished.connect(finished)
    try:
        ok = claim_one(add, 1, 1)
        process.run_job(ok)
        bad = claim_one(fail, "no")
        process.run_job(bad)
    finally:
        signals.job_started.disconnect(started)
        signals.job_finished.disconnect(finished)
    assert seen == [
        ("started", ok.pk),
        ("finished", (ok.pk, 2, "NoneType")),
        ("started", bad.pk),
        ("finished", (bad.pk, None, "RuntimeError")),
    ]


def test_a_receiver_that_raises_changes_nothing(process: WorkerProcess, caplog: pytest.LogCaptureFixture) -> None:
    def broken(**kwargs: Any) -> None:
        raise ValueError("a bug in a hook")

    signals.job_started.connect(broken)
    signals.job_finished.connect(broken)
    try:
        job = claim_one(add, 4, 4)
        assert process.run_job(job) == JobOutcome(job, result=8)
        logged = [record for record in caplog.records if record.name == "django_sqlqueue.signals"]
        raised = [record for record in logged if record.getMessage().startswith("Receiver")]
        assert [record.getMessage().endswith(f" of {job} raised") for record in raised] == [True, True]
        assert [str(record.exc_info[1]) for record in raised if record.exc_info] == ["a bug in a hook"] * 2
    finally:
        signals.job_started.disconnect(broken)
        signals.job_finished.disconnect(broken)


def test_a_row_naming_an_unregistered_task_fails_its_attempt_and_is_kept(process: WorkerProcess) -> None:
    job = claim_one(add, 1, 2, max_attempts=1)
    Job.objects.filter(pk=job.pk).update(task="os.system")
    job.task = "os.system"
    process.record([process.run_job(job)])
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.errors[0]["exception_class_path"] == "django_sqlqueue.exceptions.UnknownTaskError"
    assert "'os.system'" in job.errors[0]["message"]


def test_jobs_not_started_when_stopping_go_back_uncounted(process: WorkerProcess) -> None:
    job = claim_one(add, 1, 2)
    process.stop.set()
    process.record([process.run_job(job)])
    job.refresh_from_db()
    assert (job.status, job.attempts, job.errors) == (JobStatus.READY, 0, [])


def test_batches_start_at_one_job_a_thread_and_grow_while_jobs_are_quick(process: WorkerProcess) -> None:
    assert process.next_batch_size() == 2
    process.seconds_per_job = 0.001
    assert [process.next_batch_size() for _ in range(7)] == [4, 8, 16, 32, 64, 100, 100]
    process.seconds_per_job = 0.25  # the last batch took a quarter second of wall time per job
    assert process.next_batch_size() == 4


@pytest.mark.parametrize("threads", [1, 4, 16])
def test_a_batch_holds_about_a_second_of_wall_time_whatever_the_threads(threads: int) -> None:
    with worker_process(threads=threads, batch_size=10_000) as process:
        # Measured as the batch's wall time over its jobs: with more threads, a smaller number.
        process.seconds_per_job = 0.01
        sizes = [process.next_batch_size() for _ in range(12)]
    assert sizes[-1] == 100
    assert sizes[-1] * process.seconds_per_job == pytest.approx(BATCH_SECONDS)


def test_a_batch_never_exceeds_the_batch_size_even_with_more_threads() -> None:
    """The started-jobs slots hold one batch: a claim of a job per thread above
    ``--batch-size`` crashed the process as its extra job started (with
    ``--max-jobs-per-process``, which no longer capped the claim at the batch size)."""
    with worker_process(threads=4, batch_size=2, max_jobs_per_process=500) as process:
        sizes = [process.next_batch_size()]
        process.seconds_per_job = 0.001
        sizes += [process.next_batch_size() for _ in range(3)]
    assert sizes == [2, 2, 2, 2]


def test_a_process_is_worn_out_after_its_jobs_or_past_its_memory() -> None:
    with worker_process(max_jobs_per_process=3) as process:
        process.succeeded, process.failed = 1, 1
        assert process.worn_out() is None
        process.failed = 2
        assert process.worn_out() == "ran 3 jobs (--max-jobs-per-process 3)"
    with worker_process(max_memory=1) as process:
        assert process.worn_out() is None  # not before its first job, however big it starts
        process.succeeded = 1
        assert (process.worn_out() or "").endswith("MiB (--max-memory 1)")
    with worker_process(max_memory=10**6) as process:
        process.succeeded = 1
        assert process.worn_out() is None


def test_budget_is_shared_and_given_back() -> None:
    shared = multiprocessing.Value("q", 10)
    budget = Budget(shared)
    assert budget.take(7) == 7
    assert budget.take(7) == 3
    budget.give_back(2)
    assert budget.take(5) == 2
    assert Budget(None).take(1000) == 1000


def test_budget_keeps_charged_only_the_jobs_an_outcome_written_finished() -> None:
    shared = multiprocessing.Value("q", 10)
    budget = Budget(shared)
    assert budget.take(10) == 10
    # 10 taken: 4 finished, 2 to retry, 1 snoozed, and 3 given back unstarted or fenced off.
    budget.give_back_unfinished(10, {"succeeded": 2, "failed": 1, "cancelled": 1, "retried": 2, "snoozed": 1})
    assert shared.value == 6


def test_a_missing_table_stops_the_worker_instead_of_waiting_for_the_database(process: WorkerProcess) -> None:
    """SQLite raises OperationalError for it, which once counted as a database away."""
    table, moved = connection.ops.quote_name(Job._meta.db_table), connection.ops.quote_name("moved_away")
    # Only if the worker loops instead (the bug): stop it, so that the test fails rather than hangs.
    safety_net = threading.Timer(30, process.stop.set)
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} RENAME TO {moved}")
    try:
        safety_net.start()
        with pytest.raises(DatabaseError) as excinfo:
            process.run()
    finally:
        safety_net.cancel()
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {moved} RENAME TO {table}")
    assert not is_unavailable(excinfo.value)


def test_the_jobs_of_a_claim_whose_answer_was_lost_are_given_back_and_run(
    process: WorkerProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The connection died after the database committed the claim (a server restart, a
    killed session, a network cut): its jobs are RUNNING for a live worker that never
    got them, and its heartbeat would keep them so for as long as it lives."""
    jobs = Job.objects.enqueue_many(Job.objects.build(add, (n, n)) for n in range(3))
    claim = JobManager.claim
    lost: list[Job] = []

    def committed_then_lost(manager: JobManager[Job], **options: Any) -> list[Job]:
        claimed = claim(manager, **options)
        if lost:
            return claimed
        lost.extend(claimed)
        raise InterfaceError("connection already closed")

    monkeypatch.setattr(JobManager, "claim", committed_then_lost)
    caplog.set_level(logging.WARNING, logger="django_sqlqueue")  # whatever an earlier command set
    process.run()
    assert len(lost) == 2  # the first batch: a job a thread
    assert "Rescued 2 job(s) from worker w: the answer to its claim was lost with the connection" in caplog.text
    rows = (
        Job.objects.filter(pk__in=[job.pk for job in jobs]).order_by("pk").values_list("status", "attempts", "result")
    )
    assert list(rows) == [(JobStatus.SUCCESSFUL, 1, 2 * n) for n in range(3)]


@needs_a_server
def test_outcomes_whose_finish_is_killed_twice_in_a_row_are_kept_and_written(
    process: WorkerProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The finish's session is killed (an administrator, a failover, a proxy), and the
    next one's on a fresh connection too: the worker keeps the outcomes and writes them
    once it reconnects, a success as a success, never as a refusal to store it."""
    jobs = [claim_one(add, 2, 3), claim_one(fail, "its own"), claim_one(snooze, 60)]
    outcomes = [process.run_job(job) for job in jobs]
    sever_outcome_writes(monkeypatch, times=2)
    caplog.set_level(logging.WARNING, logger="django_sqlqueue")  # whatever an earlier command set
    process.record(outcomes)
    rows = Job.objects.order_by("pk").values_list("status", "result", "attempts", "snoozes", "last_error_class")
    assert list(rows) == [
        (JobStatus.SUCCESSFUL, 5, 1, 0, ""),
        (JobStatus.READY, None, 1, 0, "builtins.RuntimeError"),
        (JobStatus.READY, None, 0, 1, ""),
    ]
    assert caplog.text.count("reconnecting in") == 2
    assert "refused" not in caplog.text


@needs_a_server
def test_a_batch_whose_last_finish_is_killed_twice_completes_once(
    process: WorkerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finish, its batch's count and its callbacks' enqueue are one transaction: the
    killed session rolls it all back, and the worker writes it all again."""
    with Job.objects.batch(on_finish=(batch_done, ("end",))) as batch:
        Job.objects.enqueue(add, (2, 3))
    [job] = Job.objects.claim(worker_id="w")
    outcome = process.run_job(job)
    sever_outcome_writes(monkeypatch, times=2)
    process.record([outcome])
    job.refresh_from_db()
    batch.refresh_from_db()
    assert (job.status, job.result, job.errors) == (JobStatus.SUCCESSFUL, 5, [])
    assert (batch.succeeded, batch.pending, list(batch.callback_jobs)) == (1, 0, ["on_finish"])
    assert list(Job.objects.exclude(pk=job.pk).values_list("pk", flat=True)) == [batch.callback_jobs["on_finish"]]


@needs_a_server
def test_a_stopping_worker_whose_finish_is_killed_says_so_and_writes_its_outcomes(
    process: WorkerProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopping (SIGTERM) drops no outcome it holds: it keeps trying within the grace period."""
    job = claim_one(add, 2, 3)
    outcome = process.run_job(job)
    process.stop.set()
    sever_outcome_writes(monkeypatch, times=2)
    caplog.set_level(logging.WARNING, logger="django_sqlqueue")  # whatever an earlier command set
    process.record([outcome])
    job.refresh_from_db()
    assert (job.status, job.result, job.errors) == (JobStatus.SUCCESSFUL, 5, [])
    assert caplog.text.count("w: stopping with outcomes not yet written: it keeps trying until the shutdown grace") == 1


def lose_the_answer_and_stop(process: WorkerProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's next claim commits, then the answer is lost and the worker is asked
    to stop: it gives the jobs back as it exits rather than before a next claim."""
    claim = JobManager.claim

    def committed_then_lost(manager: JobManager[Job], **options: Any) -> list[Job]:
        claim(manager, **options)
        process.stop.set()
        raise InterfaceError("connection already closed")

    monkeypatch.setattr(JobManager, "claim", committed_then_lost)


def test_a_worker_stopped_after_a_claim_whose_answer_was_lost_gives_its_jobs_back(
    process: WorkerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped (SIGTERM) before its next claim: the jobs do not wait for a lease to run out."""
    job = Job.objects.enqueue(add, (1, 2))
    lose_the_answer_and_stop(process, monkeypatch)
    process.run()
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.READY, 0)


def test_a_worker_that_cannot_give_back_a_lost_claims_jobs_as_it_stops_says_so_and_exits(
    process: WorkerProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The database is still unavailable as it stops: the jobs are left to the rescue of workers
    gone without a row, and the process exits rather than wait or raise."""
    job = Job.objects.enqueue(add, (1, 2))
    lose_the_answer_and_stop(process, monkeypatch)

    def still_unavailable(*args: Any, **options: Any) -> int:
        raise InterfaceError("connection already closed")

    monkeypatch.setattr("django_sqlqueue.runner.worker.rescue_worker", still_unavailable)
    caplog.set_level(logging.WARNING, logger="django_sqlqueue")  # whatever an earlier command set
    process.run()
    assert "could not give back the jobs of a claim whose answer was lost" in caplog.text
    job.refresh_from_db()
    assert (job.status, job.worker) == (JobStatus.RUNNING, "w")


@pytest.mark.skipif(
    connection.vendor != "mysql", reason="only MySQL/MariaDB reads candidates before locking them, and loses some"
)
def test_candidates_locked_by_another_worker_are_counted(process: WorkerProcess) -> None:
    jobs = Job.objects.enqueue_many(Job.objects.build(add, (n, n)) for n in range(4))
    other = connections.create_connection("default")
    other.set_autocommit(False)
    table = other.ops.quote_name(Job._meta.db_table)
    with other.cursor() as cursor:  # the first two in claim order, as another worker's claim would hold them
        cursor.execute(
            f"SELECT id FROM {table} FORCE INDEX (PRIMARY) WHERE id IN (%s, %s) FOR UPDATE", [jobs[0].pk, jobs[1].pk]
        )

    def run() -> None:
        try:
            process.run()
        finally:
            connections.close_all()  # this thread's own

    worker = threading.Thread(target=run)
    worker.start()
    try:
        wait_until(lambda: process.candidates_lost > 0, timeout=30)
    finally:
        other.rollback()
        other.close()
        worker.join(30)
    assert not worker.is_alive()
    assert process.candidates_lost >= 2
    assert set(Job.objects.values_list("status", flat=True)) == {JobStatus.SUCCESSFUL}


class StoppingAfterOneBeat(threading.Event):
    """Set (the worker is stopping), yet its first wait lets one more beat through: a beat
    that began just before the stop."""

    def __init__(self) -> None:
        super().__init__()
        self.set()
        self.beats = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.beats += 1
        return self.beats > 1


def test_a_beat_while_stopping_does_not_register_the_unregistered_worker_again(process: WorkerProcess) -> None:
    process.stop = StoppingAfterOneBeat()
    process._beat()
    assert not Worker.objects.exists()


def test_a_worker_whose_row_was_gone_starts_no_other_job_of_its_batch(process: WorkerProcess) -> None:
    """Its jobs were rescued while it was frozen: they run elsewhere, not here again."""
    first, second = (claim_one(add, n, 1) for n in range(2))
    process.lost = True  # what its heartbeat learnt
    assert process.run_job(first) == JobOutcome(first, started=False)
    assert process.run_job(second) == JobOutcome(second, started=False)


def test_a_late_heartbeat_makes_it_check_each_job_before_starting_it(process: WorkerProcess) -> None:
    kept, taken = (claim_one(add, n, 1) for n in range(2))
    Job.objects.filter(pk=taken.pk).update(status=JobStatus.READY, worker="")  # rescued while it was frozen
    process.beat_at -= process.lease_half + 1
    assert process.run_job(kept) == JobOutcome(kept, result=1)
    assert process.lost is False
    assert process.run_job(taken) == JobOutcome(taken, started=False)
    assert process.lost is True


class OneBeat(threading.Event):
    """Not stopping for one beat, then stopping."""

    def __init__(self) -> None:
        super().__init__()
        self.beats = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.beats += 1
        return self.beats > 1


def test_a_worker_registered_by_its_beat_holds_the_projects_now(process: WorkerProcess) -> None:
    """Issue 36, case 4: MySQL filled a new worker's ``started_at`` and ``heartbeat_at``
    from the table's ``DEFAULT``, compiled when it was migrated (UTC here): with
    ``USE_TZ = False`` in New York its heartbeat was 5 hours ahead of the clock."""
    process.stop = OneBeat()
    with zones(False, "America/New_York", SERVER_ZONES[connection.vendor][0]):
        process._beat()
        worker = Worker.objects.get()
        now = timezone.now()
        assert abs(worker.started_at - now) < CLOSE
        assert abs(worker.heartbeat_at - now) < CLOSE
