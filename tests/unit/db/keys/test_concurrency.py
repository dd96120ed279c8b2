"""Concurrency limits (``db/concurrency.py``): what a claim admits under a key's limit,
how the jobs of a saturated key stay ready without holding back the others, and how
the count stays right across claimers and isolation levels."""

from __future__ import annotations

import datetime
import re
import threading
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, connections, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.db import claiming, engines
from django_sqlqueue.db.keys import concurrency
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.models import ConcurrencyKey, Job, JobStatus
from django_sqlqueue.rules.registry import job
from tests.support.racing import claim_at_once
from tests.testapp.tasks import noop, one_at_a_time, per_tenant

requires_row_locks = pytest.mark.skipif(
    connection.vendor == "sqlite", reason="SQLite claims one writer at a time: there is no lock to race for"
)


def keyed(count: int, key: str = "tenant-7", limit: int = 2, **options: Any) -> list[Job]:
    return Job.objects.enqueue_many(
        Job.objects.build(noop, (index,), concurrency_key=key, concurrency_limit=limit, **options)
        for index in range(count)
    )


def running(key: str = "tenant-7") -> int:
    return Job.objects.filter(status=JobStatus.RUNNING, concurrency_key=key).count()


@pytest.mark.django_db
def test_a_claim_takes_no_more_than_the_limit_and_the_rest_stay_ready() -> None:
    jobs = keyed(5)
    claimed = Job.objects.claim(worker_id="w1", limit=10)
    assert [job.pk for job in claimed] == [job.pk for job in jobs[:2]]
    assert not Job.objects.claim(worker_id="w2", limit=10)
    assert Job.objects.filter(status=JobStatus.READY).count() == 3


@pytest.mark.django_db
def test_a_finished_job_frees_its_slot_at_once() -> None:
    jobs = keyed(4)
    first = Job.objects.claim(worker_id="w1", limit=10)
    Job.objects.finish(worker_id="w1", succeeded={first[0]: None})
    assert [job.pk for job in Job.objects.claim(worker_id="w2", limit=10)] == [jobs[2].pk]


@pytest.mark.django_db
def test_a_rescued_job_frees_its_slot_once() -> None:
    keyed(4)
    Job.objects.claim(worker_id="dead", limit=10)
    # What a rescue does: back to READY, so the slot frees, and the job can be claimed again.
    Job.objects.filter(worker="dead").update(status=JobStatus.READY, worker="")
    assert len(Job.objects.claim(worker_id="w2", limit=10)) == 2
    assert running() == 2
    # A fenced finish of the dead worker writes nothing, and so frees nothing.
    assert Job.objects.finish(worker_id="dead", succeeded=dict.fromkeys(Job.objects.all())) == 0
    assert not Job.objects.claim(worker_id="w3", limit=10)


@pytest.mark.django_db
def test_jobs_of_a_saturated_key_do_not_hold_back_the_jobs_behind_them() -> None:
    keyed(2, limit=1, priority=5)
    Job.objects.claim(worker_id="w1", limit=1)
    saturated = keyed(10, limit=1, priority=5)
    free = Job.objects.enqueue_many([Job.objects.build(noop, (1,)), Job.objects.build(noop, (2,))])
    claimed = Job.objects.claim(worker_id="w2", limit=2)
    assert [job.pk for job in claimed] == [job.pk for job in free]
    assert Job.objects.filter(pk__in=[job.pk for job in saturated], status=JobStatus.READY).count() == 10


@pytest.mark.django_db
def test_keys_are_counted_apart_and_each_job_under_its_own_limit() -> None:
    keyed(3, key="a", limit=1)
    keyed(3, key="b", limit=2)
    Job.objects.enqueue_many(Job.objects.build(noop) for _ in range(2))
    claimed = Job.objects.claim(worker_id="w1", limit=100)
    assert sorted((job.concurrency_key or "") for job in claimed) == ["", "", "a", "b", "b"]


@pytest.mark.django_db
def test_a_key_is_derived_from_the_named_arguments() -> None:
    job = Job.objects.enqueue(per_tenant, ("t1",), {"seconds": 0.5})
    assert (job.concurrency_key, job.concurrency_limit) == ('tests.testapp.tasks.per_tenant:{"tenant":"t1"}', 2)
    same = Job.objects.build(per_tenant, kwargs={"tenant": "t1", "log": "x"})
    assert same.concurrency_key == job.concurrency_key
    assert Job.objects.build(per_tenant, ("t2",)).concurrency_key == 'tests.testapp.tasks.per_tenant:{"tenant":"t2"}'
    # A limit without names is a limit on the task as a whole.
    assert Job.objects.build(one_at_a_time).concurrency_key == "tests.testapp.tasks.one_at_a_time"
    # An explicit key or limit wins over the task's.
    assert Job.objects.build(per_tenant, ("t1",), concurrency_key="k", concurrency_limit=5).concurrency_key == "k"
    long = Job.objects.build(per_tenant, ("x" * 300,)).concurrency_key
    assert long is not None
    assert long.startswith("sha256:")
    assert len(long) == 71


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"concurrency_key": "k"}, "concurrency_limit must be an integer from 1 to 1000000, not None"),
        ({"concurrency_key": "k", "concurrency_limit": 0}, "concurrency_limit must be an integer from 1"),
        ({"concurrency_key": "", "concurrency_limit": 1}, "concurrency_key must be a non-empty string"),
        ({"concurrency_key": "k" * 256, "concurrency_limit": 1}, "concurrency_key must be a non-empty string"),
    ],
)
def test_bad_concurrency_options_are_refused_and_nothing_is_written(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidJobError, match=problem):
        Job.objects.enqueue(noop, **options)
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_key_that_cannot_be_derived_is_refused() -> None:
    with pytest.raises(InvalidJobError, match=r"Cannot derive the concurrency key of .*per_tenant: missing a required"):
        Job.objects.enqueue(per_tenant)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"concurrency": ("tenant",)}, "concurrency needs a concurrency_limit"),
        ({"concurrency": "tenant", "concurrency_limit": 1}, "concurrency must be a tuple of argument names"),
        ({"concurrency": ("nope",), "concurrency_limit": 1}, r"concurrency names \['nope'\], which are not"),
        ({"concurrency_limit": 0}, "concurrency_limit must be an integer from 1"),
    ],
)
def test_bad_decorator_options_are_refused(options: dict[str, Any], problem: str) -> None:
    def task(tenant: str) -> None: ...

    task.__qualname__ = "task"
    with pytest.raises(ImproperlyConfigured, match=problem):
        job(**options)(task)


@pytest.mark.django_db(transaction=True)
@requires_row_locks
def test_concurrent_claimers_never_take_more_than_the_limit() -> None:
    keyed(20, key="race", limit=3)
    claimed = claim_at_once(6, limit=5)
    assert sum(claimed) == running("race") == 3
    assert list(ConcurrencyKey.objects.values_list("key", flat=True)) == ["race"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "mysql", reason="REPEATABLE READ snapshots are MySQL/MariaDB's trap")
def test_a_claim_in_a_stale_repeatable_read_snapshot_still_counts_the_latest_rows() -> None:
    keyed(5, key="snap")
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    try:
        with transaction.atomic():
            assert Job.objects.filter(status=JobStatus.RUNNING).count() == 0  # the snapshot is taken here

            def other() -> None:
                try:
                    assert len(Job.objects.claim(worker_id="other", limit=10)) == 2
                finally:
                    connections.close_all()

            thread = threading.Thread(target=other)
            thread.start()
            thread.join(60)
            assert running("snap") == 0  # still the snapshot
            assert not Job.objects.claim(worker_id="stale", limit=10)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    assert running("snap") == 2


def first_claim_statement() -> str:
    with CaptureQueriesContext(connection) as queries:
        Job.objects.claim(worker_id="w", limit=10)
    statement = next(query["sql"] for query in queries.captured_queries if "concurrency_limit" in query["sql"])
    # The claim's guard on expiry holds one IS NULL of its own.
    return statement.replace('"expires_at" IS NULL', "").replace("`expires_at` IS NULL", "")


@pytest.mark.django_db
def test_until_a_process_meets_a_key_its_claims_leave_out_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(concurrency, "_KEYS_SEEN", set())
    Job.objects.enqueue(noop)
    assert "IS NULL" not in first_claim_statement()
    keyed(3)
    assert len(Job.objects.claim(worker_id="w", limit=10)) == 2  # admitted under the lock all the same
    keyed(1)
    assert "IS NULL" in first_claim_statement()


@pytest.mark.skipif(connection.vendor == "mysql", reason="MySQL/MariaDB have no UPDATE … RETURNING")
@pytest.mark.django_db
@override_settings(SQLQUEUE_RATE_LIMITS={})  # the test settings rate-limit a task
def test_a_keyless_claim_is_one_update_returning_until_keys_are_met(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(concurrency, "_KEYS_SEEN", set())
    plain = Job.objects.enqueue_many([Job.objects.build(noop, (index,)) for index in range(3)])
    with CaptureQueriesContext(connection) as queries:
        claimed = Job.objects.claim(worker_id="w", limit=3)
    assert [job.pk for job in claimed] == [job.pk for job in plain]
    assert [(job.status, job.worker, job.attempts) for job in claimed] == [(JobStatus.RUNNING, "w", 1)] * 3
    # Beside the savepoint and PostgreSQL's SET LOCAL, one UPDATE picks the ready ids
    # itself and returns the claimed jobs (PostgreSQL) or their ids (SQLite, which reads
    # them once it has let go of the write lock).
    around = ("SAVEPOINT", "RELEASE", "SET")
    statements = [query["sql"] for query in queries.captured_queries if not query["sql"].startswith(around)]
    assert re.search(r"^UPDATE .*(IN \(|ANY\(ARRAY\()SELECT .* RETURNING ", statements[0]), statements[0]
    if connection.vendor == "sqlite":
        assert statements[0].endswith("RETURNING id")
        assert len(statements) == 2
        by_id = re.escape(f"{connection.ops.quote_name(Job._meta.db_table)}.{connection.ops.quote_name('id')} IN (")
        assert re.search(rf"^SELECT .* WHERE {by_id}", statements[1]), statements[1]
    else:
        assert len(statements) == 1, statements

    # Keyed jobs in front: the keyless UPDATE leaves them; the same claim admits them under their limit.
    keyed(3)
    later = Job.objects.enqueue(noop, (9,))
    claimed = Job.objects.claim(worker_id="w", limit=4)
    assert running() == 2
    assert later.pk in {job.pk for job in claimed}
    assert len(claimed) == 3
    assert concurrency.keys_seen(connection.alias)


@pytest.mark.django_db
@override_settings(SQLQUEUE_RATE_LIMITS={})  # the test settings rate-limit a task
def test_a_short_plain_claim_looks_for_keyed_jobs_without_building_its_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker taking jobs as they come claims fewer than it wants every time, and each
    such claim asks whether keyed jobs wait among its candidates (which its statement
    left out): through the condition its connection made once for those queues, not by
    building and compiling them again. Keyed jobs are still found and admitted."""
    monkeypatch.setattr(concurrency, "_KEYS_SEEN", set())
    built: list[Any] = []
    init = claiming.Candidates.__init__

    def counted(self: claiming.Candidates[Any], model: Any, using: str, build: Any, cache_key: Any) -> None:
        def counted_build() -> Any:
            built.append(cache_key)
            return build()

        init(self, model, using, counted_build, cache_key)

    monkeypatch.setattr(claiming.Candidates, "__init__", counted)
    engines.forget()
    Job.objects.enqueue(noop)
    assert len(Job.objects.claim(worker_id="w", limit=10)) == 1  # makes what its queues need
    made = len(built)
    for index in range(3):
        Job.objects.enqueue(noop, (index,))
        assert len(Job.objects.claim(worker_id="w", limit=10)) == 1
    assert len(built) == made
    assert not concurrency.keys_seen(connection.alias)
    keyed(1)
    assert [job.concurrency_key for job in Job.objects.claim(worker_id="w", limit=10)] == ["tenant-7"]
    assert concurrency.keys_seen(connection.alias)


@requires_row_locks  # SQLite's claims need no key rows: there are none to forget
@pytest.mark.django_db
def test_pruning_forgets_the_rows_of_keys_no_active_job_has() -> None:
    from django_sqlqueue.db import pruning

    done = keyed(1, key="done")
    keyed(2, key="busy")
    Job.objects.claim(worker_id="w", limit=10)
    Job.objects.finish(worker_id="w", succeeded={Job.objects.get(pk=done[0].pk): None})
    assert set(ConcurrencyKey.objects.values_list("pk", flat=True)) == {"done", "busy"}

    # A turn cut short by a backlog of due jobs leaves the keys for a turn that gets through.
    cut = pruning.prune(Job.objects.on_queue_db(), {JobStatus.SUCCESSFUL: datetime.timedelta(days=1)}, max_chunks=0)
    assert (cut.complete, cut.keys) == (False, 0)
    assert set(ConcurrencyKey.objects.values_list("pk", flat=True)) == {"done", "busy"}
    pruned = pruning.prune(Job.objects.on_queue_db(), {})
    assert pruned.keys == 1
    assert set(ConcurrencyKey.objects.values_list("pk", flat=True)) == {"busy"}
    # A key whose row went is claimed again as before: its row comes back.
    Job.objects.finish(worker_id="w", succeeded=dict.fromkeys(Job.objects.filter(status=JobStatus.RUNNING)))
    keyed(3, key="done")
    assert len(Job.objects.claim(worker_id="w2", limit=10)) == 2
    assert set(ConcurrencyKey.objects.values_list("pk", flat=True)) == {"done", "busy"}


@requires_row_locks
@pytest.mark.django_db
def test_a_key_taken_after_it_was_read_as_idle_keeps_its_row(monkeypatch: pytest.MonkeyPatch) -> None:
    from django_sqlqueue.db import transient

    keyed(1, key="k")
    Job.objects.claim(worker_id="w", limit=10)
    Job.objects.finish(worker_id="w", succeeded=dict.fromkeys(Job.objects.all()))
    real = transient.retry_transient

    def enqueued_meanwhile(*args: Any, **kwargs: Any) -> Any:
        keyed(1, key="k")  # between the read of idle keys and the DELETE
        return real(*args, **kwargs)

    monkeypatch.setattr(concurrency, "retry_transient", enqueued_meanwhile)
    assert concurrency.forget_idle_keys(Job, connection.alias, 100) == 0
    assert list(ConcurrencyKey.objects.values_list("pk", flat=True)) == ["k"]


@pytest.mark.django_db
@override_settings(SQLQUEUE_RATE_LIMITS={})  # the test settings rate-limit a task
def test_a_claim_takes_the_same_jobs_whether_or_not_this_process_has_met_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``_KEYS_SEEN`` changes the claim's statement (the free-slot condition is left out
    until a key is met), never what it takes: the shortcut equals the plain path."""
    keyed(3)
    Job.objects.enqueue_many([Job.objects.build(noop, (index,)) for index in range(3)])
    claimed = {}
    for seen in (set(), {connection.alias}):
        monkeypatch.setattr(concurrency, "_KEYS_SEEN", set(seen))
        with transaction.atomic():
            claimed[bool(seen)] = sorted(job.pk for job in Job.objects.claim(worker_id="w", limit=10))
            transaction.set_rollback(True)
    assert claimed[False] == claimed[True]
    assert len(claimed[True]) == 5  # the three keyless jobs and two of the key's three
