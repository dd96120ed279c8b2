"""Jobs by queue and status (``counting.py``): exact while the table is small, the
finished statuses estimated past a size."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.reporting import counting
from django_sqlqueue.reporting.counting import QueueCounts, queue_counts, sampled_estimates, status_counts
from django_sqlqueue.rules.lifecycle import FINISHED
from tests.support.admin_helpers import make_job
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db

SUCCESSFUL, FAILED, CANCELLED = JobStatus.SUCCESSFUL, JobStatus.FAILED, JobStatus.CANCELLED


def test_status_counts_per_queue() -> None:
    for status in (JobStatus.READY, JobStatus.READY, JobStatus.RUNNING):
        make_job(status)
    make_job(CANCELLED, queue="mail")
    assert status_counts(Job.objects.get_queryset()) == {
        "default": {JobStatus.READY: 2, JobStatus.RUNNING: 1},
        "mail": {CANCELLED: 1},
    }


def make_statuses(statuses: Sequence[str], queue: str = "default") -> list[Job]:
    made = Job.objects.enqueue_many(Job.objects.build(noop, queue=queue) for _ in statuses)
    for status in set(statuses):
        Job.objects.filter(pk__in=[job.pk for job, of in zip(made, statuses, strict=True) if of == status]).update(
            status=status
        )
    return made


def test_a_sample_that_draws_every_id_counts_every_finished_job_however_rows_were_deleted() -> None:
    made = make_statuses([SUCCESSFUL] * 30 + [FAILED] * 12 + [JobStatus.READY] * 3)
    make_statuses([CANCELLED] * 5 + [JobStatus.RUNNING], queue="mail")
    Job.objects.filter(pk__in=[job.pk for job in made[:30:3]]).delete()  # gaps in the ids: 10 successes gone
    assert sampled_estimates(Job.objects.get_queryset(), above=0) == {
        "default": {SUCCESSFUL: 20, FAILED: 12, CANCELLED: 0},
        "mail": {SUCCESSFUL: 0, FAILED: 0, CANCELLED: 5},
    }


def test_a_smaller_sample_reads_runs_of_ids_by_key_and_scales_them_up(monkeypatch: pytest.MonkeyPatch) -> None:
    make_statuses([FAILED if n % 10 == 0 else SUCCESSFUL for n in range(2000)])
    for name, value in {"STRATA": 4, "FIRST_RUNS": 2, "SECOND_RUNS": 8}.items():
        monkeypatch.setattr(counting, name, value)
    with CaptureQueriesContext(connection) as queries:
        estimates = sampled_estimates(Job.objects.get_queryset(), above=0)
    # The lowest and highest ids, the 4 x 2 runs of 10 ids, then 8 more runs among the (all dense) strata.
    assert len(queries) == 2 + 1 + 1
    assert estimates is not None
    finished = estimates["default"]
    assert 1800 * 0.9 <= finished[SUCCESSFUL] <= 1800 * 1.1, finished
    assert 200 * 0.8 <= finished[FAILED] <= 200 * 1.2, finished
    assert abs(sum(finished.values()) - 2000) <= 4  # each drawn id is a finished job's: the span, but for rounding
    # The same table draws the same ids: the figures hold still between two looks.
    assert sampled_estimates(Job.objects.get_queryset(), above=0) == estimates


def test_sparse_strata_are_counted_and_the_sample_spent_on_the_dense_ones() -> None:
    """As pruning leaves a table: old failures far apart (kept 30 days), the successes of
    the last day packed at the top of the ids."""
    made = make_statuses([FAILED] * 200 + [FAILED if n % 10 == 0 else SUCCESSFUL for n in range(1000)])
    first = made[0].pk
    base = first + 10_000_000  # above every id: no UPDATE below meets another row's id
    Job.objects.filter(pk__lt=first + 200).update(id=(F("id") - first) * 500 + base)  # one row in 500 ids
    Job.objects.filter(pk__gte=first + 200, pk__lt=base).update(id=F("id") - first - 200 + base + 100_000)
    with CaptureQueriesContext(connection) as queries:
        estimates = sampled_estimates(Job.objects.get_queryset(), above=0)
    # The top stratum holds the 1,000 successes' ids and is drawn whole; the 99 below are
    # counted in one range, as none has 5 finished jobs in the 100 ids probed.
    assert estimates == {"default": {SUCCESSFUL: 900, FAILED: 300, CANCELLED: 0}}
    [counted] = [query["sql"] for query in queries if "BETWEEN" in query["sql"]]
    assert counted.count("BETWEEN") == 1


def test_the_sample_reads_in_chunks_under_sqlite_s_parameter_limit() -> None:
    make_statuses([SUCCESSFUL] * 2000)
    with CaptureQueriesContext(connection) as queries:
        estimates = sampled_estimates(Job.objects.get_queryset(), above=0)
    assert len(queries) == 2 + 3  # every id, as strata of 20 are drawn whole: 900 + 900 + 200
    assert estimates == {"default": {SUCCESSFUL: 2000, FAILED: 0, CANCELLED: 0}}


def test_no_estimate_for_an_empty_table_or_ids_spanning_no_more_than_the_limit() -> None:
    assert sampled_estimates(Job.objects.get_queryset(), above=0) is None
    make_statuses([SUCCESSFUL] * 10)
    assert sampled_estimates(Job.objects.get_queryset(), above=10) is None
    assert sampled_estimates(Job.objects.get_queryset(), above=9) is not None


def test_no_estimate_for_few_rows_far_apart() -> None:
    made = make_statuses([SUCCESSFUL] * 100)
    Job.objects.filter(pk__in=[job.pk for job in made[1:-1]]).delete()  # the oldest and the newest are left
    assert sampled_estimates(Job.objects.get_queryset(), above=50) is None  # 100 ids apart, 2 rows
    assert sampled_estimates(Job.objects.get_queryset(), above=1) == {
        "default": {SUCCESSFUL: 2, FAILED: 0, CANCELLED: 0}
    }


def test_small_tables_are_counted_exactly() -> None:
    make_statuses([SUCCESSFUL] * 3 + [JobStatus.READY])
    assert queue_counts(Job.objects.get_queryset()) == QueueCounts(
        {"default": {SUCCESSFUL: 3, JobStatus.READY: 1}}, frozenset()
    )


def analyze_on_postgresql() -> None:
    """PostgreSQL estimates from ``ANALYZE``'s statistics (inside the test's transaction,
    which rolls them back); elsewhere nothing to do."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE django_sqlqueue_job")


def test_past_the_limit_ready_and_running_stay_exact_and_finished_are_estimated() -> None:
    # Each queue half the rows and two thirds of them successes: PostgreSQL's product of
    # shares is then exact too (62 x 1/2 x 40/62 = 20), as is a sample that draws every id.
    make_statuses([SUCCESSFUL] * 20 + [FAILED] * 10 + [JobStatus.READY])
    make_statuses([SUCCESSFUL] * 20 + [FAILED] * 10 + [JobStatus.RUNNING], queue="mail")
    analyze_on_postgresql()
    found = queue_counts(Job.objects.get_queryset(), estimate_above=0)
    finished = {SUCCESSFUL: 20, FAILED: 10, CANCELLED: 0}
    assert found.counts == {"default": {**finished, JobStatus.READY: 1}, "mail": {**finished, JobStatus.RUNNING: 1}}
    assert found.estimated == {"default", "mail"}
    assert found.estimated_statuses("mail") == FINISHED == (SUCCESSFUL, FAILED, CANCELLED)
