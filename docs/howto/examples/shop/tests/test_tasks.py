"""The guides' tasks, run as a worker runs them."""

from __future__ import annotations

import logging

from django_sqlqueue.models import Job
from django_sqlqueue.signals import job_finished
from shop import receivers, tasks
from shop.tasks import build_report


def test_a_task_reports_its_progress(sqlqueue):
    assert sqlqueue.perform(tasks.export_rows, ["a", "b"]) == 2
    assert Job.objects.get().progress == {
        "done": 2,
        "total": 2,
        "message": "row 2",
    }


def test_a_task_snoozes_until_its_order_is_packed(sqlqueue):
    Job.objects.enqueue(tasks.ship_when_packed, [7])
    assert sqlqueue.run_jobs() == sqlqueue.Ran(snoozed=1)
    job = Job.objects.get()
    assert (job.status, job.attempts, job.snoozes) == ("READY", 0, 1)
    tasks.packed.add(7)
    assert sqlqueue.run_jobs(scheduled=True) == sqlqueue.Ran(succeeded=1)
    assert tasks.shipped == [7]


def test_a_django_task_runs_on_the_jobs_table(sqlqueue):
    # [django-task]
    result = build_report.enqueue(
        "monthly"
    )  # a row, inside the caller's transaction
    # ... a worker runs it ...
    result = build_report.get_result(
        result.id
    )  # from any process; result.refresh() too
    # [/django-task]
    assert sqlqueue.run_jobs(["reports"]) == sqlqueue.Ran(succeeded=1)
    result.refresh()
    assert (result.status, result.return_value) == ("SUCCESSFUL", {"rows": 42})


def test_slow_jobs_are_logged(sqlqueue, caplog, monkeypatch):
    monkeypatch.setattr(receivers, "SLOW_SECONDS", -1.0)
    with caplog.at_level(logging.WARNING, logger="shop.receivers"):
        sqlqueue.perform(tasks.send_receipt, 1)
    [message] = caplog.messages
    assert message.startswith(
        f"Job {Job.objects.get().pk} (shop.tasks.send_receipt) succeeded after "
    )
    assert job_finished.has_listeners()
