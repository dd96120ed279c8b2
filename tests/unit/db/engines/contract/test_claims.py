"""The claims of every engine (``Engine.claim`` and what the claim reads through its
engine), run against the engine of the database under test: the same jobs, in the same
order, whichever database claims them; and where the engines differ, each its own way."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections, transaction

from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.engines.mysql import CandidateWindow
from django_sqlqueue.db.keys import concurrency
from django_sqlqueue.db.keys.unique import holders
from django_sqlqueue.db.schema.indexes import FINISHED_JOBS
from django_sqlqueue.models import Job, JobStatus
from tests.support.admin_helpers import make_job
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["plain", "keyed"])
def keyed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, settings: Any) -> bool:
    """Every claim test runs as a worker that met no keyed job yet (its claims take
    keyless jobs by a statement kept for their cache key) and as one that did (its claims
    admit every candidate under its limits)."""
    met: bool = request.param == "keyed"
    settings.SQLQUEUE_RATE_LIMITS = {}
    monkeypatch.setattr(concurrency, "_KEYS_SEEN", {"default"} if met else set())
    return met


def test_the_claim_takes_the_first_ready_jobs_in_claim_order(keyed: bool) -> None:
    low = Job.objects.enqueue(noop, priority=0)
    high = Job.objects.enqueue(noop, priority=5)
    Job.objects.enqueue(noop, priority=0)
    claimed = Job.objects.claim(worker_id="w", limit=2)
    assert [job.pk for job in claimed] == [high.pk, low.pk]
    assert claimed.lost == 0
    assert [(job.status, job.worker, job.attempts) for job in claimed] == [(JobStatus.RUNNING, "w", 1)] * 2
    assert all(job.started_at is not None for job in claimed)
    rows = Job.objects.filter(pk__in=[high.pk, low.pk]).values_list("status", "worker", "attempts")
    assert sorted(rows) == [(JobStatus.RUNNING, "w", 1)] * 2


def test_a_claim_takes_jobs_under_their_concurrency_limits(keyed: bool) -> None:
    first, second = (Job.objects.enqueue(noop, concurrency_key="k", concurrency_limit=1) for _ in range(2))
    free = Job.objects.enqueue(noop)
    claimed = Job.objects.claim(worker_id="w", limit=3)
    assert sorted(job.pk for job in claimed) == sorted([first.pk, free.pk])
    assert Job.objects.get(pk=second.pk).status == JobStatus.READY


def test_a_claim_of_nothing_takes_nothing(keyed: bool) -> None:
    Job.objects.enqueue(noop)
    claimed = Job.objects.claim(worker_id="w", queues=[], limit=5)
    assert (list(claimed), claimed.lost) == ([], 0)
    assert list(Job.objects.claim(worker_id="w", queues=["empty"], limit=5)) == []


def test_a_claim_inside_a_callers_transaction_ends_with_it(keyed: bool) -> None:
    job = Job.objects.enqueue(noop)
    with transaction.atomic():
        [claimed] = Job.objects.claim(worker_id="w", limit=1)
        transaction.set_rollback(True)
    assert claimed.pk == job.pk
    assert Job.objects.get(pk=job.pk).status == JobStatus.READY


def test_only_sqlites_claim_holds_the_whole_database() -> None:
    default = connections["default"]
    assert engine(default).claim_holds_database is (default.vendor == "sqlite")


def test_the_latest_rows_are_read_with_a_lock_only_on_mysql() -> None:
    default = connections["default"]
    latest = engine(default).latest(Job.objects.all())
    assert latest.query.select_for_update is (default.vendor == "mysql")


def test_the_holder_of_a_key_is_found_through_the_unique_index() -> None:
    held = Job.objects.enqueue(noop, unique_key="k")
    Job.objects.enqueue(noop, unique_key="other")
    assert {key: job.pk for key, job in holders(Job, "default", ["k", "absent"]).items()} == {"k": held.pk}


def test_the_planners_hints_leave_the_rows_as_they_were() -> None:
    ready, failed = make_job(), make_job(JobStatus.FAILED)
    default = connections["default"]
    jobs = Job.objects.get_queryset()
    finished = engine(default).finished_first(jobs, FINISHED_JOBS)
    # Narrowed to the finished jobs only on PostgreSQL, where the index holds only them.
    expected = [failed.pk] if default.vendor == "postgresql" else [ready.pk, failed.pk]
    assert sorted(finished.values_list("pk", flat=True)) == expected
    in_range = engine(default).range_first(jobs, jobs.filter(pk__gte=failed.pk))
    assert list(in_range.values_list("pk", flat=True)) == [failed.pk]


def test_a_claimers_window_widens_only_when_it_came_back_short() -> None:
    window = CandidateWindow(Job, connections["default"])
    assert window.lost([1, 2, 3], [1, 2, 3], 3) == 0
    assert window.per_job == 1
    assert window.lost([1, 2, 3], [3], 3) == 2  # short: all it did not lock were lost
    assert window.per_job == 2
    assert window.lost([1, 2, 3, 4, 5, 6], [3, 5, 6], 3) == 3  # full, but 1, 2 and 4 held by others
    assert window.per_job == 2
    assert window.lost([], [], 3) == 0  # nothing ready: nothing lost
    assert window.per_job == 1
    assert window.lost([1, 2, 3], [], 3) == 3
    assert window.per_job == 2
    window.per_job = window.MOST
    assert window.lost([1, 2], [], 3) == 2
    assert window.per_job == window.MOST
    assert window.lost([1, 2], [1, 2], 3) == 0
    assert window.per_job == window.MOST // 2
