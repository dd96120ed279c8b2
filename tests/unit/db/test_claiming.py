"""``Job.objects.claim()`` and the statements of ``db/claiming.py``: what a claim takes,
in what order, and how it keeps clear of rows another transaction holds."""

from __future__ import annotations

import datetime
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, connections, transaction
from django.db.models import Q
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.conf import MAX_CLAIM_LIMIT
from django_sqlqueue.db import claiming, engines
from django_sqlqueue.db.claiming import ClaimedJobs
from django_sqlqueue.db.clock import DatabaseNow
from django_sqlqueue.db.engines.postgresql import PostgreSQL
from django_sqlqueue.db.keys import concurrency
from django_sqlqueue.models import Job, JobStatus
from tests.support.spies import counting
from tests.testapp.tasks import noop, report

UTC = datetime.timezone.utc
PAST = datetime.datetime(2001, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True, params=["rate limits configured", "plain"])
def claims(request: pytest.FixtureRequest, settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs twice: with the tests' rate limits, whose claims build their
    candidates each time, and with none and no keyed job met yet (the default), whose
    claims keep their statements for their queues. A test may set its own after this."""
    if request.param == "plain":
        settings.SQLQUEUE_RATE_LIMITS = {}
        monkeypatch.setattr(concurrency, "_KEYS_SEEN", set())
    return str(request.param)


requires_row_locks = pytest.mark.skipif(
    connection.vendor == "sqlite",
    reason="SQLite has no row locks: select_for_update is a no-op and a claim takes the whole database's write lock",
)
sqlite_only = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="the write lock held by another connection is SQLite's"
)


def db_now() -> datetime.datetime:
    """The database's clock, read through the jobs table (which must hold a row)."""
    now = Job.objects.annotate(now=DatabaseNow()).values_list("now", flat=True).first()
    assert now is not None, "db_now() reads the clock through a row: enqueue one first"
    return now


def enqueue(count: int, **options: Any) -> list[Job]:
    return Job.objects.enqueue_many(Job.objects.build(noop, (index,), **options) for index in range(count))


def ids(jobs: list[Job]) -> list[int]:
    return [job.pk for job in jobs]


# What a claim does to the jobs it takes


@pytest.mark.django_db
def test_claimed_jobs_are_running_for_the_worker() -> None:
    job = Job.objects.enqueue(noop, ("x",))
    before = db_now()
    claimed = Job.objects.claim(worker_id="host:1:worker-1")
    after = db_now()

    assert isinstance(claimed, ClaimedJobs)
    assert ids(claimed) == [job.pk]
    mine = claimed[0]
    assert (mine.status, mine.worker, mine.attempts) == (JobStatus.RUNNING, "host:1:worker-1", 1)
    # Each claim reads the database's clock; on PostgreSQL inside the test's transaction
    # that clock stands still, so a time taken from Python would come after `after`.
    assert mine.started_at is not None
    assert before <= mine.started_at <= after
    assert not hasattr(mine, "claim_time")

    stored = Job.objects.get(pk=job.pk)
    assert (stored.status, stored.worker, stored.attempts, stored.started_at) == (
        JobStatus.RUNNING,
        "host:1:worker-1",
        1,
        mine.started_at,
    )
    assert (stored.args, stored.finished_at, stored.errors, stored.result) == (["x"], None, [], None)


@pytest.mark.django_db
def test_every_job_of_a_claim_has_the_same_start() -> None:
    enqueue(5)
    claimed = Job.objects.claim(worker_id="w")
    assert len(claimed) == 5
    assert len({job.started_at for job in claimed}) == 1
    assert set(Job.objects.values_list("started_at", flat=True)) == {claimed[0].started_at}


@pytest.mark.django_db
def test_attempts_are_counted_at_each_claim() -> None:
    job = Job.objects.enqueue(noop)
    (first,) = Job.objects.claim(worker_id="w")
    assert first.attempts == 1
    assert Job.objects.finish(worker_id="w", failed={first: RuntimeError("boom")}) == 1
    # Make the retry due now rather than after its backoff.
    Job.objects.filter(pk=job.pk).update(run_at=PAST)

    (second,) = Job.objects.claim(worker_id="w2")
    assert (second.pk, second.attempts, second.worker) == (job.pk, 2, "w2")
    job.refresh_from_db()
    assert (job.status, job.attempts, job.worker) == (JobStatus.RUNNING, 2, "w2")


@pytest.mark.django_db
def test_claimed_job_is_not_claimed_again() -> None:
    enqueue(3)
    first = Job.objects.claim(worker_id="a")
    assert len(first) == 3
    again = Job.objects.claim(worker_id="b")
    assert (list(again), again.lost) == ([], 0)
    assert set(Job.objects.values_list("worker", flat=True)) == {"a"}


# How many


@pytest.mark.django_db
def test_claims_at_most_limit() -> None:
    jobs = enqueue(5)
    first = Job.objects.claim(worker_id="w", limit=2)
    second = Job.objects.claim(worker_id="w", limit=2)
    third = Job.objects.claim(worker_id="w", limit=2)
    assert (ids(first), ids(second), ids(third)) == (ids(jobs[:2]), ids(jobs[2:4]), ids(jobs[4:]))
    assert Job.objects.filter(status=JobStatus.RUNNING).count() == 5


@pytest.mark.django_db
@override_settings(SQLQUEUE_BATCH_SIZE=3)
def test_default_limit_is_the_batch_size() -> None:
    enqueue(5)
    assert len(Job.objects.claim(worker_id="w")) == 3
    assert Job.objects.filter(status=JobStatus.READY).count() == 2


@pytest.mark.django_db
def test_batch_size_default_is_100() -> None:
    enqueue(101)
    assert len(Job.objects.claim(worker_id="w")) == 100


@pytest.mark.django_db
@pytest.mark.parametrize("limit", [0, -1, True, False, 2.0, "3", MAX_CLAIM_LIMIT + 1, 2**63, 10**20])
def test_invalid_limit_is_refused(limit: Any) -> None:
    """A limit past the cap is refused in words, never handed to the database (which
    refuses 10**20 with its own error)."""
    enqueue(2)
    with pytest.raises(ValueError, match=rf"^limit must be an integer from 1 to {MAX_CLAIM_LIMIT}, not "):
        Job.objects.claim(worker_id="w", limit=limit)
    assert Job.objects.filter(status=JobStatus.READY).count() == 2


@pytest.mark.django_db
def test_empty_worker_id_is_refused() -> None:
    enqueue(1)
    with pytest.raises(ValueError, match=r"^worker_id must name the worker that claims\.$"):
        Job.objects.claim(worker_id="")
    assert Job.objects.get().status == JobStatus.READY


@pytest.mark.django_db
def test_nothing_ready_claims_nothing() -> None:
    claimed = Job.objects.claim(worker_id="w")
    assert (list(claimed), claimed.lost) == ([], 0)


@pytest.mark.django_db
def test_lost_is_zero_without_contention() -> None:
    enqueue(4)
    claimed = Job.objects.claim(worker_id="w", limit=3)
    assert (len(claimed), claimed.lost) == (3, 0)


# In what order


@pytest.mark.django_db
def test_claim_order_is_priority_then_run_at_then_id() -> None:
    def at(hour: int) -> datetime.datetime:
        return datetime.datetime(2020, 1, 1, hour, tzinfo=UTC)

    specs = [  # (name, priority, run_at), in insertion (id) order
        ("low-early", -5, at(1)),
        ("mid-late", 0, at(9)),
        ("high-late", 10, at(8)),
        ("mid-early-1", 0, at(2)),
        ("high-early", 10, at(3)),
        ("mid-early-2", 0, at(2)),
        ("top", 100, at(23)),
        ("mid-middle", 0, at(5)),
    ]
    made = Job.objects.enqueue_many(
        Job.objects.build(noop, (name,), priority=priority, run_at=run_at) for name, priority, run_at in specs
    )
    assert ids(made) == sorted(ids(made))
    expected = ["top", "high-early", "high-late", "mid-early-1", "mid-early-2", "mid-middle", "mid-late", "low-early"]

    claimed = Job.objects.claim(worker_id="w", limit=100)
    assert [job.args[0] for job in claimed] == expected


@pytest.mark.django_db
def test_claim_order_across_batches() -> None:
    low = Job.objects.enqueue(noop, ("low",), priority=-1)
    old = Job.objects.enqueue(noop, ("old",), run_at=PAST)
    high = Job.objects.enqueue(noop, ("high",), priority=1)
    new = Job.objects.enqueue(noop, ("new",))
    batches = [ids(Job.objects.claim(worker_id="w", limit=1)) for _ in range(5)]
    assert batches == [[high.pk], [old.pk], [new.pk], [low.pk], []]


# Which jobs


@pytest.mark.django_db
def test_delayed_job_is_not_claimed() -> None:
    Job.objects.enqueue(noop, delay=3600)
    Job.objects.enqueue(noop, run_at=datetime.datetime(2999, 1, 1, tzinfo=UTC), priority=100)
    ready = Job.objects.enqueue(noop)
    assert ids(Job.objects.claim(worker_id="w")) == [ready.pk]
    assert Job.objects.filter(status=JobStatus.READY).count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", ["delay", "run_at"])
def test_job_due_in_a_second_is_claimed_only_once_due(how: str) -> None:
    # Transactional: PostgreSQL's now() stands still inside the test's transaction.
    Job.objects.enqueue(noop, ("clock",), priority=100)
    assert len(Job.objects.claim(worker_id="clock", limit=1)) == 1  # a row for db_now() that is not ready
    options = {"delay": 1} if how == "delay" else {"run_at": db_now() + datetime.timedelta(seconds=1)}
    job = Job.objects.enqueue(noop, ("soon",), **options)
    due = Job.objects.filter(pk=job.pk).values_list("run_at", flat=True).get()

    claimed: list[Job] = []
    while not claimed:
        claimed_at = db_now()
        claimed = Job.objects.claim(worker_id="w")
        if claimed:
            assert ids(claimed) == [job.pk]
            started_at = claimed[0].started_at
            assert started_at is not None
            assert started_at >= due
        else:
            assert claimed_at < due + datetime.timedelta(milliseconds=1)
            assert claimed_at > due - datetime.timedelta(seconds=5), "the job was never claimed"
            time.sleep(0.05)
    assert claimed_at >= due - datetime.timedelta(seconds=0.9), "claimed well before its run_at"


@pytest.mark.django_db
def test_queues() -> None:
    default = Job.objects.enqueue(noop)
    mail = Job.objects.enqueue(noop, queue="mail")
    reports = Job.objects.enqueue(report, ("r",))
    assert ids(Job.objects.claim(worker_id="w", queues=["nothing-here"])) == []
    assert ids(Job.objects.claim(worker_id="w", queues=["reports"])) == [reports.pk]
    assert ids(Job.objects.claim(worker_id="w", queues=("mail", "default"))) == [default.pk, mail.pk]


@pytest.mark.django_db
def test_no_queues_claims_from_every_queue() -> None:
    jobs = [Job.objects.enqueue(noop, queue=name) for name in ("a", "b", "c")]
    assert ids(Job.objects.claim(worker_id="w", queues=None)) == ids(jobs)


@pytest.mark.django_db
def test_empty_queues_claims_nothing() -> None:
    enqueue(2)
    assert ids(Job.objects.claim(worker_id="w", queues=[])) == []


@pytest.mark.django_db
def test_filter_on_the_first_argument() -> None:
    apple = Job.objects.enqueue(noop, ("apple", 1))
    Job.objects.enqueue(noop, ("banana", 2))
    avocado = Job.objects.enqueue(noop, ("avocado",))
    Job.objects.enqueue(noop, (), {"name": "almond"})
    Job.objects.enqueue(noop, (1, "a"))
    claimed = Job.objects.claim(worker_id="w", filter=Q(args__0__startswith="a"))
    assert ids(claimed) == [apple.pk, avocado.pk]
    assert Job.objects.filter(status=JobStatus.READY).count() == 3


@pytest.mark.django_db
def test_filter_on_kwargs_and_task_with_queues_and_limit() -> None:
    Job.objects.enqueue(noop, (), {"tenant": 7}, queue="mail")
    wanted = [Job.objects.enqueue(noop, (), {"tenant": 7}) for _ in range(3)]
    Job.objects.enqueue(noop, (), {"tenant": 8})
    Job.objects.enqueue(report, ("x",), queue="default")
    claimed = Job.objects.claim(
        worker_id="w", queues=["default"], limit=2, filter=Q(kwargs__tenant=7) & Q(task="tests.testapp.tasks.noop")
    )
    assert ids(claimed) == ids(wanted[:2])


@pytest.mark.django_db
def test_filter_matching_nothing_claims_nothing() -> None:
    enqueue(3)
    assert ids(Job.objects.claim(worker_id="w", filter=Q(priority__gt=50))) == []


@pytest.mark.django_db
def test_filter_cannot_widen_the_claim_to_jobs_not_ready() -> None:
    running = Job.objects.enqueue(noop)
    Job.objects.filter(pk=running.pk).update(status=JobStatus.RUNNING)
    Job.objects.enqueue(noop, delay=3600)
    assert ids(Job.objects.claim(worker_id="w", filter=Q(status=JobStatus.RUNNING) | Q(pk__gt=0))) == []


@pytest.mark.django_db
@pytest.mark.parametrize("status", [JobStatus.RUNNING, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.SUCCESSFUL])
def test_jobs_not_ready_are_never_claimed(status: JobStatus) -> None:
    held = enqueue(3)
    Job.objects.filter(pk__in=ids(held)).update(status=status, worker="someone")
    ready = Job.objects.enqueue(noop, priority=-100)
    assert ids(Job.objects.claim(worker_id="w")) == [ready.pk]
    assert list(Job.objects.filter(pk__in=ids(held)).values_list("status", "worker", "attempts").distinct()) == [
        (status, "someone", 0)
    ]


# How a claim reads: along the index that holds the claim order, never a sort of every ready job


def analyze_empty_jobs_table() -> None:
    """Statistics taken while the table was empty, as autovacuum takes them once a queue has drained."""
    table = connection.ops.quote_name(Job._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            {"postgresql": f"ANALYZE {table}", "mysql": f"ANALYZE TABLE {table}"}.get(connection.vendor, "ANALYZE")
        )
        if connection.vendor == "mysql":
            cursor.fetchall()


def candidate_plan(statements: list[str]) -> str:
    """The plan of the statement that read a claim's candidates (the one ordered by
    claim order), explained again after the ``SET`` statements before it (which set how
    PostgreSQL plans for the rest of the claim's transaction, sent on their own or in
    one query with the claim), then rolled back."""
    statements = [part for sql in statements for part in (sql.split("; ", 1) if sql.startswith("SET ") else [sql])]
    reading = next(index for index, sql in enumerate(statements) if "ORDER BY" in sql)
    explain = {"postgresql": "EXPLAIN", "mysql": "EXPLAIN", "sqlite": "EXPLAIN QUERY PLAN"}[connection.vendor]
    with transaction.atomic(), connection.cursor() as cursor:
        for sql in statements[:reading]:
            if sql.startswith("SET "):
                cursor.execute(sql)
        cursor.execute(f"{explain} {statements[reading]}")
        plan = "\n".join(" ".join(str(column) for column in row) for row in cursor.fetchall())
        transaction.set_rollback(True)
    return plan


#: Past about 30,000 rows, statistics of an empty table made PostgreSQL 15 sort.
BACKLOG = 50_000


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_claim_walks_the_ready_index_even_with_statistics_of_an_empty_table() -> None:
    analyze_empty_jobs_table()
    for start in range(0, BACKLOG, 5000):
        Job.objects.enqueue_many(
            Job.objects.build(noop, (number,), queue=f"q{number % 2}", run_at=PAST)
            for number in range(start, start + 5000)
        )
    for queues, index in [(None, "sqlqueue_job_ready"), (["q1"], "sqlqueue_job_ready_queue")]:
        with CaptureQueriesContext(connection) as captured:
            claimed = Job.objects.claim(worker_id="w", queues=queues, limit=10)
        assert len(claimed) == 10
        plan = candidate_plan([query["sql"] for query in captured.captured_queries])
        assert index in plan, plan
        # PostgreSQL's Sort, MySQL's filesort, SQLite's temporary B-tree: every ready job read and sorted.
        assert not re.search(r"\bSort\b|filesort|TEMP B-TREE", plan), plan


@pytest.mark.skipif(connection.vendor != "postgresql", reason="only PostgreSQL plans by settings a claim changes")
@pytest.mark.django_db(transaction=True)
def test_walk_is_pinned_only_in_the_claims_own_transaction_and_where_an_index_holds_the_order() -> None:
    enqueue(3)
    with CaptureQueriesContext(connection) as captured:
        Job.objects.claim(worker_id="w", limit=1)
        Job.objects.claim(worker_id="w", queues=["default"], limit=1)
    assert sum(query["sql"].startswith("SET LOCAL enable_sort") for query in captured.captured_queries) == 2
    with CaptureQueriesContext(connection) as captured:
        # A filter or two queues: another index may find the few candidates, then a sort is cheap.
        Job.objects.claim(worker_id="w", filter=Q(pk__gt=0), limit=1)
        Job.objects.claim(worker_id="w", queues=["default", "other"], limit=1)
        with transaction.atomic(), connection.cursor() as cursor:
            assert len(Job.objects.claim(worker_id="w", limit=1)) == 0  # all three claimed
            cursor.execute("SHOW enable_sort")
            assert cursor.fetchone() == ("on",)  # the caller's transaction plans as it did
    assert not [query for query in captured.captured_queries if query["sql"].startswith("SET")]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="only PostgreSQL plans by settings a claim changes")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("apart", [False, True], ids=["as the connection binds", "sent apart"])
def test_the_pin_goes_with_the_claim_in_one_query_where_the_driver_sends_several(
    monkeypatch: pytest.MonkeyPatch, settings: Any, apart: bool
) -> None:
    # The plain claim, whose statement is kept: rate limits claim in two transactions.
    settings.SQLQUEUE_RATE_LIMITS = {}
    monkeypatch.setattr(concurrency, "_KEYS_SEEN", set())
    # Django binds client-side unless OPTIONS ask otherwise (tox's ssb environment does).
    server_side = connection.settings_dict["OPTIONS"].get("server_side_binding") is True
    assert PostgreSQL(connections["default"]).sends_several() is not server_side
    if apart:
        monkeypatch.setattr(PostgreSQL, "sends_several", lambda self: False)
    enqueue(2)
    with CaptureQueriesContext(connection) as captured:
        assert len(Job.objects.claim(worker_id="w", limit=1)) == 1
    sent = [query["sql"] for query in captured.captured_queries]
    if not (apart or server_side):
        # One round trip, run by PostgreSQL as one transaction: no BEGIN, no COMMIT.
        assert len(sent) == 1, sent
        assert sent[0].startswith("SET LOCAL enable_sort = off; UPDATE"), sent
    else:
        assert [sql.split()[0] for sql in sent] == ["BEGIN", "SET", "UPDATE", "COMMIT"], sent
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_sort")
        assert cursor.fetchone() == ("on",)  # the pin ended with the claim's transaction
    assert Job.objects.filter(status=JobStatus.RUNNING).count() == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="psycopg's cursors")
@pytest.mark.django_db
def test_server_side_binding_sends_each_statement_on_its_own() -> None:
    other = connections.create_connection("default")
    options = {**other.settings_dict["OPTIONS"], "server_side_binding": True}
    other.settings_dict = {**other.settings_dict, "OPTIONS": options}
    try:
        assert not PostgreSQL(other).sends_several()
    finally:
        other.close()


# Locks: a claim never waits on rows another transaction holds.


@pytest.fixture
def other_connection() -> Iterator[Any]:
    """A second connection to the test database, in a transaction of its own."""
    other = connections.create_connection("default")
    other.set_autocommit(False)
    try:
        yield other
    finally:
        other.rollback()
        other.close()


def lock_rows(other: Any, jobs: list[Job]) -> None:
    """Lock exactly these rows, as another claimer would, until ``other`` ends its transaction."""
    table = other.ops.quote_name(Job._meta.db_table)
    # On a small table InnoDB may scan a covering secondary index and keep every record it
    # passed locked, even under READ COMMITTED: lock through the primary key only.
    if other.vendor == "mysql":
        table += " FORCE INDEX (PRIMARY)"
    placeholders = ", ".join(["%s"] * len(jobs))
    with other.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {table} WHERE id IN ({placeholders}) FOR UPDATE", ids(jobs))
        assert sorted(row[0] for row in cursor.fetchall()) == sorted(ids(jobs))


@requires_row_locks
@pytest.mark.django_db(transaction=True)
def test_claim_skips_rows_locked_by_another_transaction(other_connection: Any) -> None:
    jobs = enqueue(5)
    locked, free = jobs[:2], jobs[2:]  # the first two in claim order
    lock_rows(other_connection, locked)

    started = time.monotonic()
    claimed = Job.objects.claim(worker_id="w", limit=10)
    assert time.monotonic() - started < 2

    assert ids(claimed) == ids(free)
    # On MySQL the candidates are read before they are locked: the two locked ones count as lost.
    assert claimed.lost == (2 if connection.vendor == "mysql" else 0)
    other_connection.rollback()
    assert set(Job.objects.filter(pk__in=ids(locked)).values_list("status", flat=True)) == {JobStatus.READY}
    assert ids(Job.objects.claim(worker_id="w", limit=10)) == ids(locked)


@requires_row_locks
@pytest.mark.django_db(transaction=True)
def test_a_claim_in_flight_does_not_hold_up_another() -> None:
    # The first claim runs inside an outer transaction, so its locks last until we let it go.
    jobs = enqueue(6)
    holding, let_go = threading.Event(), threading.Event()
    first: list[Job] = []

    def claim_and_hold() -> None:
        try:
            with transaction.atomic():
                first.extend(Job.objects.claim(worker_id="first", limit=2))
                holding.set()
                let_go.wait(10)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=claim_and_hold)
    thread.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        second = Job.objects.claim(worker_id="second", limit=10)
        assert time.monotonic() - started < 2
    finally:
        let_go.set()
        thread.join()

    assert ids(first) == ids(jobs[:2])
    assert ids(second) == ids(jobs[2:])
    assert second.lost == (2 if connection.vendor == "mysql" else 0)
    workers = dict(Job.objects.values_list("pk", "worker"))
    assert workers == {job.pk: "first" if job in jobs[:2] else "second" for job in jobs}


@requires_row_locks
@pytest.mark.django_db(transaction=True)
def test_claim_of_only_locked_rows_returns_at_once(other_connection: Any) -> None:
    jobs = enqueue(3)
    lock_rows(other_connection, jobs)
    started = time.monotonic()
    claimed = Job.objects.claim(worker_id="w")
    assert time.monotonic() - started < 2
    assert list(claimed) == []
    assert claimed.lost == (3 if connection.vendor == "mysql" else 0)


@requires_row_locks
@pytest.mark.django_db(transaction=True)
def test_limit_counts_the_rows_a_claim_could_lock(other_connection: Any) -> None:
    jobs = enqueue(6)
    lock_rows(other_connection, jobs[:2])
    claimed = Job.objects.claim(worker_id="w", limit=3)
    if connection.vendor == "mysql":
        # The three candidates are chosen first; two turn out to be taken.
        assert (ids(claimed), claimed.lost) == (ids(jobs[2:3]), 2)
    else:
        # SKIP LOCKED ... LIMIT fills the batch from the rows nobody holds.
        assert (ids(claimed), claimed.lost) == (ids(jobs[2:5]), 0)


@requires_row_locks
@pytest.mark.django_db(transaction=True)
def test_a_claimer_that_lost_its_candidates_reads_further_next_time(other_connection: Any) -> None:
    """MySQL/MariaDB read the candidates before locking them, so claimers at once read
    the same first ones: one that lost them all reads twice as many next time and takes
    those nobody holds, lowest id first; once it loses none, back to what it wants, in
    claim order. Elsewhere SKIP LOCKED ... LIMIT takes the free ones the first time."""
    jobs = enqueue(8)
    lock_rows(other_connection, jobs[:2])
    first = Job.objects.claim(worker_id="w", limit=2)
    second = Job.objects.claim(worker_id="w", limit=2)
    if connection.vendor == "mysql":
        assert (ids(first), first.lost) == ([], 2)
        # Four candidates read; the two below the highest it took were held by another.
        assert (ids(second), second.lost) == (ids(jobs[2:4]), 2)
    else:
        assert (ids(first), first.lost, ids(second), second.lost) == (ids(jobs[2:4]), 0, ids(jobs[4:6]), 0)
    other_connection.rollback()
    # The window is still twice the limit (nothing was lost and it halves after): the
    # lowest ids of the four first candidates. Then one at a time, in claim order.
    Job.objects.filter(pk=jobs[7].pk).update(priority=5)
    third = Job.objects.claim(worker_id="w", limit=1)
    fourth = Job.objects.claim(worker_id="w", limit=1)
    if connection.vendor == "mysql":
        assert (ids(third), third.lost, ids(fourth), fourth.lost) == (ids(jobs[:1]), 0, ids(jobs[7:8]), 0)
    else:
        assert (ids(third), ids(fourth)) == (ids(jobs[7:8]), ids(jobs[:1]))


@requires_row_locks
@pytest.mark.django_db(transaction=True)
def test_locked_row_claimed_meanwhile_is_not_claimed_again(other_connection: Any) -> None:
    # Another claimer locked the row and marks it RUNNING, then commits: a claim that read it
    # as a candidate must check again that it is still ready once it gets the lock.
    jobs = enqueue(2)
    lock_rows(other_connection, jobs[:1])
    table = other_connection.ops.quote_name(Job._meta.db_table)
    with other_connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET status = %s, worker = %s WHERE id = %s", ["RUNNING", "other", jobs[0].pk])
    other_connection.commit()
    assert ids(Job.objects.claim(worker_id="w")) == ids(jobs[1:])
    assert Job.objects.get(pk=jobs[0].pk).worker == "other"


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_sqlite_claim_waits_for_the_write_lock() -> None:
    jobs = enqueue(3)
    path = connection.settings_dict["NAME"]
    locker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        locker.execute("BEGIN IMMEDIATE")
        impatient = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                impatient.execute("BEGIN IMMEDIATE")
        finally:
            impatient.close()

        release = threading.Timer(0.3, locker.execute, ("ROLLBACK",))
        release.start()
        started = time.monotonic()
        claimed = Job.objects.claim(worker_id="w")
        waited = time.monotonic() - started
        release.join()
    finally:
        locker.close()
    assert ids(claimed) == ids(jobs)
    assert 0.25 <= waited < 10


# Refusing a database set up so that claims would be unsafe


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor == "postgresql", reason="no PostgreSQL setting makes claiming unsafe")
def test_claim_refuses_a_misconfigured_database(monkeypatch: pytest.MonkeyPatch) -> None:
    job = Job.objects.enqueue(noop)
    options = dict(connection.settings_dict.get("OPTIONS") or {})
    if connection.vendor == "sqlite":
        del options["transaction_mode"]
        expected = (
            r"^SQLite database 'default' opens transactions in DEFERRED mode, .*\. Add 'OPTIONS': "
            r"\{'transaction_mode': 'IMMEDIATE'\} to this database in settings\.DATABASES\.$"
        )
    else:
        options["isolation_level"] = "repeatable read"
        expected = (
            r"^MySQL database 'default' uses isolation level 'repeatable read': .*\. Remove 'isolation_level' "
            r"from this database's OPTIONS, or set it to 'read committed'\.$"
        )
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    with pytest.raises(ImproperlyConfigured, match=expected):
        Job.objects.claim(worker_id="w")
    assert Job.objects.get(pk=job.pk).status == JobStatus.READY


@pytest.mark.skipif(connection.vendor == "mysql", reason="MySQL/MariaDB read the candidates before they lock them")
@pytest.mark.django_db(transaction=True)
def test_the_candidates_are_compiled_before_the_claims_transaction(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """SQLite's claim holds the write lock of the whole database, which every other
    claimer waits for: compiling its statement there held the lock longer. (Without
    rate limits, the claim of keyless jobs; the others lock keys and buckets first.)"""
    from django.db.models.sql.compiler import SQLCompiler

    settings.SQLQUEUE_RATE_LIMITS = {}
    monkeypatch.setattr(concurrency, "_KEYS_SEEN", set())  # no keyed job met by an earlier test

    compiled_in_a_transaction: list[bool] = []
    as_sql = SQLCompiler.as_sql

    def watched(self: SQLCompiler, *args: Any, **kwargs: Any) -> Any:
        compiled_in_a_transaction.append(connection.in_atomic_block)
        return as_sql(self, *args, **kwargs)

    Job.objects.enqueue(noop)
    monkeypatch.setattr(SQLCompiler, "as_sql", watched)
    engines.forget()  # made once for each connection
    [job] = Job.objects.claim(worker_id="w")
    assert job.status == JobStatus.RUNNING
    assert compiled_in_a_transaction
    assert not any(compiled_in_a_transaction)


@pytest.mark.django_db(transaction=True)
def test_claims_on_one_connection_make_their_statements_once(monkeypatch: pytest.MonkeyPatch) -> None:
    Job.objects.enqueue_many(Job.objects.build(noop) for _ in range(4))
    made: list[Any] = []
    monkeypatch.setattr(claiming._ClaimUpdate, "__init__", counting(claiming._ClaimUpdate.__init__, made))
    engines.forget()
    claimed = [Job.objects.claim(worker_id=f"w{n}", limit=1) for n in range(4)]
    assert len(made) == 1
    assert sorted(job.worker for [job] in claimed) == ["w0", "w1", "w2", "w3"]
    assert sorted(Job.objects.values_list("worker", flat=True)) == ["w0", "w1", "w2", "w3"]


@pytest.mark.django_db(transaction=True)
def test_claims_of_the_same_queues_make_their_candidates_once(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    """The candidates' condition is made once for each set of queues (and of those
    paused) on a connection, with the limit a parameter; a caller's filter makes its own
    every time. Each claim still takes what its own queues, pauses and limit say."""
    settings.SQLQUEUE_RATE_LIMITS = {}
    monkeypatch.setattr(concurrency, "_KEYS_SEEN", set())  # no keyed job met by an earlier test
    for queue in ("a", "b", "c"):
        Job.objects.enqueue_many(Job.objects.build(noop, (n,), queue=queue) for n in range(6))
    made: list[Any] = []
    monkeypatch.setattr(claiming._CandidateStatements, "_make", counting(claiming._CandidateStatements._make, made))
    engines.forget()

    def taken(**options: Any) -> list[tuple[str, int]]:
        return [(job.queue, job.args[0]) for job in Job.objects.claim(worker_id="w", **options)]

    assert taken(queues=["a"], limit=1) == [("a", 0)]
    assert taken(queues=["a"], limit=2) == [("a", 1), ("a", 2)]
    assert len(made) == 1
    assert taken(queues=["b"], limit=1) == [("b", 0)]
    assert taken(queues=["a", "b"], limit=3, skip_queues={"a"}) == [("b", 1), ("b", 2), ("b", 3)]
    assert taken(queues=["b"], limit=1) == [("b", 4)]
    assert len(made) == 2
    assert taken(limit=2, skip_queues={"a", "b"}) == [("c", 0), ("c", 1)]
    assert taken(limit=1) == [("a", 3)]
    assert len(made) == 4
    assert taken(filter=Q(queue="c"), limit=1) == [("c", 2)]
    assert taken(filter=Q(queue="c"), limit=1) == [("c", 3)]
    assert taken(queues=[], limit=1) == []
    assert taken(queues=[], limit=1) == []
    assert len(made) == 7


@pytest.mark.django_db(transaction=True)
def test_past_the_shapes_kept_the_candidates_are_made_again(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    settings.SQLQUEUE_RATE_LIMITS = {}
    monkeypatch.setattr(concurrency, "_KEYS_SEEN", set())
    monkeypatch.setattr(claiming._CandidateStatements, "KEPT", 2)
    for queue in ("a", "b", "c"):
        Job.objects.enqueue_many(Job.objects.build(noop, (n,), queue=queue) for n in range(3))
    engines.forget()
    for round in range(3):
        for queue in ("a", "b", "c"):
            [job] = Job.objects.claim(worker_id="w", queues=[queue], limit=1)
            assert (job.queue, job.args) == (queue, [round])
    assert not Job.objects.filter(status=JobStatus.READY).exists()


@pytest.mark.django_db(transaction=True)
def test_rate_buckets_are_read_before_the_claims_transaction(settings: Any) -> None:
    """With rate limits, the candidates leave out the tasks whose bucket is empty, read
    from the buckets: on SQLite inside the claim's transaction, every other claimer
    would wait for that read."""
    from django_sqlqueue.models import RateBucket

    settings.SQLQUEUE_RATE_LIMITS = {"test-rate": "20/s"}
    Job.objects.enqueue(noop)
    in_a_transaction: list[bool] = []

    def watch(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if RateBucket._meta.db_table in sql:
            in_a_transaction.append(context["connection"].in_atomic_block)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        [job] = Job.objects.claim(worker_id="w")
    assert job.task == "tests.testapp.tasks.noop"
    assert in_a_transaction[0] is False


@pytest.mark.django_db
def test_paused_queues_may_be_any_iterable() -> None:
    Job.objects.enqueue(noop, queue="paused")
    ready = Job.objects.enqueue(noop, queue="open")
    paused = (queue for queue in ["paused"])
    assert ids(Job.objects.claim(worker_id="w", skip_queues=paused)) == [ready.pk]  # type: ignore[arg-type]
