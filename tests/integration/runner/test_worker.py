"""A real ``runworkers`` worker records a batch whose outcomes the database cannot all
store: the good jobs are written once, the bad ones fail with the reason, and nothing loops."""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection

from django_sqlqueue.models import Job, JobStatus
from tests.support.workers import Workers
from tests.testapp.models import Receipt
from tests.testapp.tasks import raise_unprintable, record, unstorable


def test_a_bad_outcome_fails_its_job_alone_and_the_burst_ends(start_workers: Callable[..., Workers]) -> None:
    # Each bad job first in a batch of good ones: with four threads, batches start at four jobs.
    bad = [raise_unprintable] if connection.vendor == "sqlite" else [raise_unprintable, unstorable]
    for index, task in enumerate(bad):
        Job.objects.enqueue(task)
        Job.objects.enqueue_many(Job.objects.build(record, (f"token-{index}-{n}",)) for n in range(7))

    workers = start_workers("--burst", "--processes", "1", "--threads", "4")
    assert workers.wait(120) == 0, workers.text()

    good = Job.objects.filter(task="tests.testapp.tasks.record")
    assert list(good.values_list("status", "attempts", "errors").distinct()) == [(JobStatus.SUCCESSFUL, 1, [])]
    assert list(Receipt.objects.values_list("runs", flat=True).distinct()) == [1]
    assert Receipt.objects.count() == good.count() == 7 * len(bad)

    unprintable = Job.objects.get(task="tests.testapp.tasks.raise_unprintable")
    (error,) = unprintable.errors
    assert (unprintable.status, error["exception_class_path"]) == (JobStatus.FAILED, "tests.testapp.tasks.Unprintable")
    assert error["message"] == "<str() of this Unprintable raised RuntimeError>"
    if unstorable in bad:
        refused = Job.objects.get(task="tests.testapp.tasks.unstorable")
        (error,) = refused.errors
        assert (refused.status, refused.result) == (JobStatus.FAILED, None)
        assert error["exception_class_path"] == "django_sqlqueue.exceptions.InvalidJobError"
        assert error["message"].startswith("tests.testapp.tasks.unstorable finished, but ")
