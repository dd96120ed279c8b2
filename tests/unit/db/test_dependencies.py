"""Workflows (``db/dependencies.py``): ``after=`` makes a job wait, the finish of its
last parent releases it, a failed parent cancels it, and bad input writes nothing."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable, Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import OperationalError, connections, transaction
from django.db.models import Q
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from django_sqlqueue import signals, workflows
from django_sqlqueue.db import dependencies, finishing
from django_sqlqueue.db.clock import DatabaseNowPlus, database_now
from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.maintenance.services import maintenance_services
from django_sqlqueue.models import Job, JobDependency, JobStatus
from django_sqlqueue.testing import run_jobs
from tests.support.admin_helpers import make_job
from tests.support.wakeups import received
from tests.testapp.models import Receipt
from tests.testapp.tasks import add, fail, gather, noop, record, sync_order

pytestmark = pytest.mark.django_db

WORKER = "w-dependencies"


def _claim_all() -> dict[int, Job]:
    return {job.pk: job for job in Job.objects.claim(worker_id=WORKER, limit=1000)}


def _status(job: Job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def test_a_job_waits_for_every_parent_then_runs_with_their_results() -> None:
    one, two = Job.objects.enqueue(add, (1, 2)), Job.objects.enqueue(add, (3, 4))
    child = Job.objects.enqueue(gather, ("child",), after=[one, two.pk])
    assert (child.status, child.waiting_for) == (JobStatus.WAITING, 2)
    claimed = _claim_all()
    assert set(claimed) == {one.pk, two.pk}  # the waiting job is never claimed
    Job.objects.finish(worker_id=WORKER, succeeded={claimed[one.pk]: 3})
    assert Job.objects.values_list("status", "waiting_for").get(pk=child.pk) == (JobStatus.WAITING, 1)
    Job.objects.finish(worker_id=WORKER, succeeded={claimed[two.pk]: 7})
    assert _status(child) == JobStatus.READY
    run_jobs()
    assert Job.objects.get(pk=child.pk).result == {str(one.pk): 3, str(two.pk): 7}
    assert Receipt.objects.get(token="child").runs == 1


def test_a_failed_parent_cancels_what_waits_on_it_all_the_way_down() -> None:
    parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    child = Job.objects.enqueue(noop, after=[parent])
    grandchild = Job.objects.enqueue(noop, after=[child])
    cleanup = Job.objects.enqueue(record, ("cleanup",), after=[child], after_failure="run")
    run_jobs()
    assert _status(parent) == JobStatus.FAILED
    for job in (child, grandchild):
        job.refresh_from_db()
        assert job.status == JobStatus.CANCELLED
        assert job.last_error_class == "django_sqlqueue.exceptions.DependencyFailed"
        assert job.finished_at is not None
    assert (
        child.errors[-1]["message"] == f"Cancelled without running: job {parent.pk}, which it waits for, ended FAILED."
    )
    assert f"job {child.pk}, which it waits for, ended CANCELLED" in grandchild.errors[-1]["message"]
    assert _status(cleanup) == JobStatus.SUCCESSFUL  # after_failure="run"
    assert Receipt.objects.get(token="cleanup").runs == 1


def test_a_parent_that_retries_keeps_its_children_waiting() -> None:
    parent = Job.objects.enqueue(fail, ("once",), max_attempts=3)
    child = Job.objects.enqueue(noop, after=[parent])
    run_jobs()
    assert _status(parent) == JobStatus.READY  # its retry waits out a backoff
    assert Job.objects.values_list("status", "waiting_for").get(pk=child.pk) == (JobStatus.WAITING, 1)


def test_a_finish_that_lost_its_fence_releases_nothing() -> None:
    parent = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent])
    (claimed,) = Job.objects.claim(worker_id=WORKER)
    Job.objects.filter(pk=parent.pk).update(status=JobStatus.READY, worker="")  # rescued meanwhile
    assert Job.objects.finish(worker_id=WORKER, succeeded={claimed: None}) == 0
    assert Job.objects.values_list("status", "waiting_for").get(pk=child.pk) == (JobStatus.WAITING, 1)
    assert not JobDependency.objects.get(child=child).settled


def test_after_finished_jobs_runs_at_once_or_is_cancelled() -> None:
    done, failed = make_job(JobStatus.SUCCESSFUL), make_job(JobStatus.FAILED)
    assert Job.objects.enqueue(noop, after=[done]).status == JobStatus.READY
    cancelled = Job.objects.enqueue(noop, after=[done, failed])
    assert (cancelled.status, _status(cancelled)) == (JobStatus.CANCELLED, JobStatus.CANCELLED)
    assert f"job {failed.pk}" in cancelled.errors[-1]["message"]
    assert Job.objects.enqueue(noop, after=[failed], after_failure="run").status == JobStatus.READY
    assert set(JobDependency.objects.values_list("settled", flat=True)) == {True}


def test_cancelling_a_workflows_job_cancels_what_waits_on_it() -> None:
    parent = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent])
    grandchild = Job.objects.enqueue(noop, after=[child])
    assert Job.objects.cancel([child.pk]) == (1, 0)  # a waiting job is cancelled at once
    assert (_status(parent), _status(grandchild)) == (JobStatus.READY, JobStatus.CANCELLED)
    Job.objects.cancel([parent.pk])
    assert _status(parent) == JobStatus.CANCELLED


@pytest.mark.parametrize(
    ("after", "message"),
    [
        (lambda: [Job.objects.build(noop)], "unsaved job"),
        (lambda: [10**12], "do not exist"),
        (lambda: ["1"], "neither a saved job nor a job id"),
        (lambda: [True], "neither a saved job nor a job id"),
        (lambda: [0], "which no job has as its id"),
    ],
)
def test_bad_after_is_refused_and_writes_nothing(after: Any, message: str) -> None:
    parent = Job.objects.enqueue(noop)
    with pytest.raises(InvalidJobError, match=message):
        Job.objects.enqueue_many([Job.objects.build(noop), Job.objects.build(noop, after=[parent, *after()])])
    assert list(Job.objects.values_list("pk", flat=True)) == [parent.pk]
    assert not JobDependency.objects.exists()


def test_a_job_of_another_database_is_refused() -> None:
    parent = Job.objects.enqueue(noop)
    parent._state.db = "elsewhere"
    with pytest.raises(InvalidJobError, match="of the database 'elsewhere'"):
        Job.objects.enqueue(noop, after=[parent])
    with pytest.raises(InvalidJobError, match="after_failure must be one of 'cancel', 'run'"):
        Job.objects.enqueue(noop, after_failure="skip")


def test_a_waiting_job_holds_its_unique_key() -> None:
    parent = Job.objects.enqueue(noop)
    waiting = Job.objects.enqueue(sync_order, (1,), after=[parent])
    again = Job.objects.enqueue(sync_order, (1,), after=[parent])
    assert (again.pk, again.created) == (waiting.pk, False)
    assert JobDependency.objects.count() == 1


def test_thousands_of_parents_in_enqueue_many_rows() -> None:
    parents = Job.objects.enqueue_many([Job.objects.build(noop) for _ in range(1200)])
    first, second = Job.objects.enqueue_many(
        [Job.objects.build(noop, after=parents), Job.objects.build(noop, after=parents[:1])]
    )
    assert (first.waiting_for, second.waiting_for) == (1200, 1)
    claimed = _claim_all()
    claimed.update(_claim_all())
    assert Job.objects.finish(worker_id=WORKER, succeeded=dict.fromkeys(claimed.values())) == 1200
    assert (_status(first), _status(second)) == (JobStatus.READY, JobStatus.READY)


def test_the_sweep_cancels_what_waits_for_a_deleted_job_and_pruning_waits() -> None:
    parent = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent])
    # Finished without settling (as by a path that does not settle), then deleted.
    Job.objects.filter(pk=parent.pk).update(status=JobStatus.SUCCESSFUL)
    assert list(Job.objects.filter(dependencies.waited_for()).values_list("pk", flat=True)) == [parent.pk]
    Job.objects.filter(pk=parent.pk).delete()
    assert dependencies.sweep(Job, "default") == 1
    child.refresh_from_db()
    assert child.status == JobStatus.CANCELLED
    assert (
        child.errors[-1]["message"] == f"Cancelled without running: job {parent.pk}, which it waits for, was deleted."
    )
    assert dependencies.sweep(Job, "default") == 0


def test_pruning_keeps_a_job_something_waits_for_and_deletes_links_with_their_child() -> None:
    parent = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent])
    two_days_ago = DatabaseNowPlus(-datetime.timedelta(days=2))
    # Finished long ago without settling (as a path that does not settle leaves it).
    Job.objects.filter(pk=parent.pk).update(status=JobStatus.SUCCESSFUL, finished_at=two_days_ago)
    call_command("sqlqueue_prune", stdout=StringIO())
    assert Job.objects.filter(pk=parent.pk).exists()  # its child still waits for it
    assert dependencies.sweep(Job, "default") == 1
    assert _status(child) == JobStatus.READY
    Job.objects.filter(pk=child.pk).update(status=JobStatus.SUCCESSFUL, finished_at=two_days_ago)
    call_command("sqlqueue_prune", stdout=StringIO())
    assert not Job.objects.filter(pk__in=[parent.pk, child.pk]).exists()
    assert not JobDependency.objects.exists()  # the pruned child's link went with it


def test_a_child_deleted_while_it_waited_loses_its_link_when_its_parent_ends() -> None:
    parent, other = Job.objects.enqueue(noop), Job.objects.enqueue(noop)
    gone = Job.objects.enqueue(noop, after=[parent])
    kept = Job.objects.enqueue(noop, after=[parent, other])
    Job.objects.filter(pk=gone.pk).delete()  # by the project's own code: nothing forgets its link
    claimed = _claim_all()
    Job.objects.finish(worker_id=WORKER, succeeded={claimed[parent.pk]: None})
    assert list(JobDependency.objects.values_list("child_id", "parent_id", "settled").order_by("parent_id")) == [
        (kept.pk, parent.pk, True),
        (kept.pk, other.pk, False),
    ]
    Job.objects.finish(worker_id=WORKER, succeeded={claimed[other.pk]: None})
    assert _status(kept) == JobStatus.READY
    assert not JobDependency.objects.filter(settled=False).exists()  # plain finishes read nothing more


def test_the_sweep_releases_what_a_finished_parent_left_waiting() -> None:
    parent = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent])
    Job.objects.filter(pk=parent.pk).update(status=JobStatus.SUCCESSFUL)
    assert dependencies.sweep(Job, "default") == 1
    assert _status(child) == JobStatus.READY


def test_an_expired_parent_counts_as_failed_for_what_waits_on_it() -> None:
    parent = Job.objects.enqueue(noop, expires_in=60)
    child = Job.objects.enqueue(noop, after=[parent])
    cleanup = Job.objects.enqueue(record, ("after-expiry",), after=[parent], after_failure="run")
    Job.objects.filter(pk=parent.pk).update(expires_at=database_now("default") - datetime.timedelta(minutes=1))
    # What the lease holder's expiry service, then its workflows' sweep, do in a turn.
    assert [service.name for service in maintenance_services(lambda rescued: None)][1:3] == ["expiry", "dependencies"]
    assert Job.objects.expire() == 1
    assert dependencies.sweep(Job, "default") == 1
    assert _status(parent) == JobStatus.CANCELLED
    child.refresh_from_db()
    assert child.status == JobStatus.CANCELLED
    assert f"job {parent.pk}, which it waits for, ended CANCELLED" in child.errors[-1]["message"]
    assert _status(cleanup) == JobStatus.READY


def test_chain_and_chord() -> None:
    steps = workflows.chain(Job.objects.build(record, (f"step-{n}",)) for n in range(5))
    assert [job.status for job in steps] == [JobStatus.READY] + [JobStatus.WAITING] * 4
    group, final = workflows.chord(
        [Job.objects.build(add, (n, n)) for n in range(4)], Job.objects.build(gather, ("f",))
    )
    assert final.waiting_for == 4
    with pytest.raises(InvalidJobError, match=f"Job {final.pk} is already enqueued"):
        workflows.chain([Job.objects.build(noop), final])
    run_jobs()
    assert Receipt.objects.filter(token__startswith="step-", runs=1).count() == 5
    assert Job.objects.get(pk=final.pk).result == {str(job.pk): 2 * n for n, job in enumerate(group)}


def _settling_that_raises(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> tuple[Job, Job, Job]:
    """A claimed parent, its waiting child, and the release that settling makes raising ``error``."""
    parent = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent])
    (claimed,) = Job.objects.claim(worker_id=WORKER)

    def raising(*args: Any) -> list[int]:
        raise error

    monkeypatch.setattr(dependencies, "_decide", raising)
    return parent, child, claimed


@pytest.mark.parametrize(
    "error", [SystemExit("killed between the links and the release"), OperationalError("deadlock detected")]
)
def test_a_settling_that_dies_midway_rolls_its_finish_back_whole_and_a_retried_finish_settles_once(
    monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    parent, child, claimed = _settling_that_raises(monkeypatch, error)
    with pytest.raises(type(error)):
        Job.objects.finish(worker_id=WORKER, succeeded={claimed: None})
    # The finish and its settling are one transaction: neither is written.
    assert (_status(parent), _status(child)) == (JobStatus.RUNNING, JobStatus.WAITING)
    assert not JobDependency.objects.get(child=child).settled
    monkeypatch.undo()
    # The finish, tried again, writes the outcome and settles in the same transaction.
    assert Job.objects.finish(worker_id=WORKER, succeeded={claimed: None}) == 1
    assert Job.objects.values_list("status", "waiting_for").get(pk=child.pk) == (JobStatus.READY, 0)
    Job.objects.finish(worker_id=WORKER, succeeded={claimed: None})  # again: nothing twice
    assert dependencies.sweep(Job, "default") == 0
    assert Job.objects.values_list("status", "waiting_for").get(pk=child.pk) == (JobStatus.READY, 0)


def test_a_database_error_while_settling_after_a_finish_is_logged_and_left_to_the_sweep(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """What a finish without a transaction settles right after it (a child linked while
    it waited for its parent's row): a database error there leaves the outcome written."""
    parent, child, claimed = _settling_that_raises(monkeypatch, OperationalError("deadlock detected"))
    ended = finishing.finish(Job.objects.all(), worker_id=WORKER, succeeded={claimed: None}, failed={})
    dependencies.settle_finished(Job, "default", [outcome.job for outcome in ended])
    assert f"Settling what waits for jobs [{parent.pk}] failed (deadlock detected)" in caplog.text
    assert (_status(parent), _status(child)) == (JobStatus.SUCCESSFUL, JobStatus.WAITING)
    monkeypatch.undo()
    assert dependencies.sweep(Job, "default") == 1
    assert _status(child) == JobStatus.READY


def _finish_at_once(outcomes: list[tuple[str, Job, bool]]) -> None:
    """Each of ``outcomes`` (worker, job, succeeded) finished by a thread of its own, on
    its own connection, all released at once by a barrier."""
    start = threading.Barrier(len(outcomes))
    errors: list[BaseException] = []

    def finisher(worker: str, job: Job, succeeded: bool) -> None:
        try:
            start.wait(30)
            if succeeded:
                Job.objects.finish(worker_id=worker, succeeded={job: None})
            else:
                Job.objects.finish(worker_id=worker, failed={job: RuntimeError("boom")})
        except BaseException as error:  # the test asserts there was none
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=finisher, args=outcome) for outcome in outcomes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_two_parents_finishing_at_once_on_two_connections_release_their_child_once() -> None:
    for round_ in range(25):
        one, two = Job.objects.enqueue(noop), Job.objects.enqueue(noop, max_attempts=1)
        child = Job.objects.enqueue(noop, after=[one, two])
        (first,) = Job.objects.claim(worker_id="racer-1", filter=Q(pk=one.pk))
        (second,) = Job.objects.claim(worker_id="racer-2", filter=Q(pk=two.pk))
        fails = round_ % 5 == 4  # now and then one fails: the child is cancelled once
        _finish_at_once([("racer-1", first, True), ("racer-2", second, not fails)])
        child.refresh_from_db()
        assert (child.status, child.waiting_for) == (JobStatus.CANCELLED if fails else JobStatus.READY, 0)
        assert len(child.errors) == int(fails)
        assert list(JobDependency.objects.filter(child=child).values_list("settled", flat=True)) == [True, True]


@pytest.mark.django_db(transaction=True)
def test_a_child_linked_while_its_parents_finish_waits_for_the_row_is_released_by_that_finish() -> None:
    parent = Job.objects.enqueue(noop)
    (claimed,) = Job.objects.claim(worker_id=WORKER)
    linked, commit = threading.Event(), threading.Event()
    children: list[Job] = []
    errors: list[BaseException] = []

    def enqueuer() -> None:
        try:
            with transaction.atomic():
                # Locks the running parent's row and links the child: the finish waits for it.
                children.append(Job.objects.enqueue(noop, after=[parent]))
                linked.set()
                assert commit.wait(30)
        except BaseException as error:  # the test asserts there was none
            errors.append(error)
        finally:
            linked.set()
            connections.close_all()

    def finisher() -> None:
        try:
            assert Job.objects.finish(worker_id=WORKER, succeeded={claimed: None}) == 1
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=enqueuer), threading.Thread(target=finisher)]
    threads[0].start()
    assert linked.wait(30)
    threads[1].start()
    time.sleep(0.5)  # the finish is under way, waiting for the parent's row
    commit.set()
    for thread in threads:
        thread.join(60)
    assert errors == []
    (child,) = children
    # No sweep ran: the finish itself released it.
    assert Job.objects.values_list("status", "waiting_for").get(pk=child.pk) == (JobStatus.READY, 0)
    assert JobDependency.objects.get(child=child).settled


class _NoIdAsked:
    """A finished job whose id must not be read: the finish's probe found nothing waiting."""

    @property
    def pk(self) -> int:
        raise AssertionError("the id of a job nothing waits for was read")


def test_a_finish_with_no_link_unsettled_reads_one_row_and_no_jobs_id(
    django_assert_num_queries: Any,
) -> None:
    parent = Job.objects.enqueue(noop)
    Job.objects.enqueue(noop, after=[parent])
    JobDependency.objects.update(settled=True)
    with django_assert_num_queries(1):
        unread: list[Any] = [_NoIdAsked(), _NoIdAsked()]
        assert dependencies.awaited("default", unread) == []
    with django_assert_num_queries(0):
        assert dependencies.awaited("default", []) == []


def _linked_elsewhere(task: Any, *args: Any) -> tuple[Job, Job]:
    """A parent and a child of ``task`` waiting for it, enqueued as another process would
    (here a thread, on its own connection): this connection has not seen them linked."""
    linked: list[Job] = []

    def link() -> None:
        linked.append(Job.objects.enqueue(noop))
        linked.append(Job.objects.enqueue(task, args, after=[linked[0]]))
        connections.close_all()

    thread = threading.Thread(target=link)
    thread.start()
    thread.join()
    parent, child = linked
    return parent, child


def _links_read(captured: CaptureQueriesContext) -> int:
    table = JobDependency._meta.db_table
    return sum(table in query["sql"] for query in captured.captured_queries)


@pytest.mark.django_db(transaction=True)
def test_with_no_workflow_under_way_a_finish_reads_the_links_once_and_still_releases_a_job_linked_elsewhere() -> None:
    first, second = Job.objects.enqueue(noop), Job.objects.enqueue(noop)
    claimed = _claim_all()
    Job.objects.finish(worker_id=WORKER, succeeded={claimed[first.pk]: None})  # looks after: nothing unsettled
    with CaptureQueriesContext(connections["default"]) as captured:
        Job.objects.finish(worker_id=WORKER, succeeded={claimed[second.pk]: None})
    assert _links_read(captured) == 1  # after its UPDATE only
    # Another process links a job to one this worker then claims: the finish that took
    # no look first settles right after.
    parent, child = _linked_elsewhere(noop)
    Job.objects.finish(worker_id=WORKER, succeeded={_claim_all()[parent.pk]: None})
    assert _status(child) == JobStatus.READY
    assert JobDependency.objects.get(child=child).settled
    # Now that it saw a link unsettled, the next finish looks first again.
    third = Job.objects.enqueue(noop)
    with CaptureQueriesContext(connections["default"]) as captured:
        Job.objects.finish(worker_id=WORKER, succeeded={_claim_all()[third.pk]: None})
    assert _links_read(captured) == 2


@pytest.mark.django_db(transaction=True)
@override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": 0})
def test_a_success_deleted_at_once_has_released_what_waits_for_it_before_its_receivers_and_the_sweep_run() -> None:
    first = Job.objects.enqueue(noop)
    Job.objects.finish(worker_id=WORKER, succeeded={_claim_all()[first.pk]: None})  # no link unsettled
    parent, child = _linked_elsewhere(record, "after-a-deleted-success")
    seen: list[object] = []

    def sweep_on_success(sender: Any, *, job: Job, **kwargs: Any) -> None:
        seen.extend([_status(child), dependencies.sweep(Job, "default")])

    signals.job_succeeded.connect(sweep_on_success)
    try:
        assert Job.objects.finish(worker_id=WORKER, succeeded={_claim_all()[parent.pk]: None}) == 1
    finally:
        signals.job_succeeded.disconnect(sweep_on_success)
    assert seen == [JobStatus.READY, 0]
    assert not Job.objects.filter(pk=parent.pk).exists()
    run_jobs()
    assert Receipt.objects.get(token="after-a-deleted-success").runs == 1
    assert not Job.objects.exists()


@pytest.mark.django_db(transaction=True)
@override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": 0})
def test_a_finish_killed_between_deleting_a_success_and_settling_its_links_deletes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = Job.objects.enqueue(noop)
    Job.objects.finish(worker_id=WORKER, succeeded={_claim_all()[first.pk]: None})  # no link unsettled
    parent, child = _linked_elsewhere(noop)
    claimed = _claim_all()[parent.pk]

    def killed(*args: Any) -> list[int]:
        raise SystemExit("killed between the delete and the release")

    monkeypatch.setattr(dependencies, "_decide", killed)
    with pytest.raises(SystemExit):
        Job.objects.finish(worker_id=WORKER, succeeded={claimed: None})
    # Still RUNNING, for its worker's next finish or the rescue; nothing for the sweep.
    assert (_status(parent), _status(child)) == (JobStatus.RUNNING, JobStatus.WAITING)
    assert dependencies.sweep(Job, "default") == 0
    monkeypatch.undo()
    assert Job.objects.finish(worker_id=WORKER, succeeded={claimed: None}) == 1
    assert _status(child) == JobStatus.READY


def test_a_finish_finds_the_jobs_that_are_waited_for() -> None:
    parent, alone = Job.objects.enqueue(noop), Job.objects.enqueue(noop)
    Job.objects.enqueue(noop, after=[parent])
    assert dependencies.awaited("default", [alone, parent]) == [parent.pk]


@pytest.fixture
def woken(request: pytest.FixtureRequest) -> Iterator[Callable[[float], list[str]]]:
    """What reached an idle worker of this database since the last call, waiting up to
    the seconds given for it: the payloads of the NOTIFYs it hears on PostgreSQL, the
    queues named by the datagrams on its wake-up socket elsewhere."""
    if engine_for("default").notifies:
        listener = engine_for("default").listening_connection()

        def heard(wait: float) -> list[str]:
            first = [notify.payload for notify in listener.connection.notifies(timeout=wait, stop_after=1)]
            return first + [notify.payload for notify in listener.connection.notifies(timeout=0.1)] if first else []

        yield heard
        listener.close()
    else:
        sock = request.getfixturevalue("sock")
        yield lambda wait: [datagram.decode() for datagram in received(sock)]


@pytest.mark.django_db(transaction=True)
def test_a_release_wakes_idle_workers_when_it_commits_and_not_when_it_rolls_back(
    woken: Callable[[float], list[str]],
) -> None:
    """A chain's next step is released by the finish of the step before: the workers
    that wait for work hear of it as of an enqueue (the finishing worker's next claim
    takes it anyway), once the release is visible, and never for one rolled back."""
    parent = Job.objects.enqueue(noop, queue="first")
    child = Job.objects.enqueue(noop, queue="then", after=[parent])
    claimed = _claim_all()
    assert woken(1.0), "the enqueues woke nobody"
    with transaction.atomic():
        Job.objects.finish(worker_id=WORKER, succeeded={claimed[parent.pk]: None})
        assert _status(child) == JobStatus.READY
        transaction.set_rollback(True)
    assert woken(0.5) == []
    with transaction.atomic():
        Job.objects.finish(worker_id=WORKER, succeeded={claimed[parent.pk]: None})
        assert _status(child) == JobStatus.READY
        assert woken(0.5) == [], "woken before the release was committed"
    # PostgreSQL's workers claim from every queue they serve on any NOTIFY; a datagram names the queues.
    assert woken(1.0) == ["" if engine_for("default").notifies else "then"]
