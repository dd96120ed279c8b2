"""``manage.py sqlqueue_stats`` in the test process; against real workers and a database
that is down, ``tests/integration/management/commands/test_sqlqueue_stats.py``."""

from __future__ import annotations

import datetime
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from django_sqlqueue import pause_queue
from django_sqlqueue.models import JobStatus, Worker
from tests.support.admin_helpers import make_job

pytestmark = pytest.mark.django_db


DONE_AND_FAILED = ["DONE/1M", "FAILED/1M", "DONE/1H", "FAILED/1H", "EXPIRED/1H", "PAUSED"]


def stats(*args: str) -> str:
    out = StringIO()
    call_command("sqlqueue_stats", *args, stdout=out)
    return out.getvalue()


def some_jobs_and_a_worker() -> None:
    make_job(run_at=timezone.now() - datetime.timedelta(minutes=10, seconds=30))
    make_job(JobStatus.FAILED, queue="mail", finished_at=timezone.now())
    Worker.objects.create(
        name="host:1:a", host="host", pid=1, queues=["default", "mail"], jobs_succeeded=12, candidates_lost=3
    )


def test_the_tables() -> None:
    some_jobs_and_a_worker()
    first, blank, *lines = stats().splitlines()
    assert first.startswith("sqlqueue at ")
    assert first.endswith(" UTC (the database's clock)")
    assert blank == ""
    assert [line.split() for line in lines] == [
        ["QUEUE", "WAITING", "READY", "RUNNING", "SUCCESSFUL", "FAILED", "CANCELLED", "LAG", *DONE_AND_FAILED],
        ["default", "0", "1", "0", "0", "0", "0", "0:10:30", "0", "0", "0", "0", "0"],
        ["mail", "0", "0", "0", "0", "1", "0", "-", "1", "1", "1", "1", "0"],
        [],
        ["1", "live", "worker(s);", "candidates", "lost", "to", "other", "workers:", "3"],
        ["NAME", "HOST", "PID", "QUEUES", "SUCCEEDED", "FAILED", "LOST", "HEARTBEAT"],
        ["host:1:a", "host", "1", "default,mail", "12", "0", "3", lines[-1].split()[-2], "ago"],
    ]
    # Fixed columns: every row as wide as its header line, figures right-aligned.
    assert (
        lines[1]
        == "default        0      1        0           0       0          0  0:10:30        0          0        0"
        + "          0           0"
    )


def test_no_jobs_and_no_workers() -> None:
    assert stats().splitlines()[1:] == ["", "No jobs.", "", "0 live worker(s); candidates lost to other workers: 0"]


def test_json_is_one_object() -> None:
    some_jobs_and_a_worker()
    figures = json.loads(stats("--json"))
    assert set(figures) == {"now", "queues", "workers", "candidates_lost"}
    default, mail = figures["queues"]
    assert default["counts"] == {"WAITING": 0, "READY": 1, "RUNNING": 0, "SUCCESSFUL": 0, "FAILED": 0, "CANCELLED": 0}
    assert 630 <= default["lag_seconds"] < 700
    assert (mail["lag_seconds"], mail["failed_last_minute"], mail["finished_last_hour"]) == (None, 1, 1)
    [worker] = figures["workers"]
    assert {key: value for key, value in worker.items() if key != "heartbeat_age_seconds"} == {
        "name": "host:1:a",
        "host": "host",
        "pid": 1,
        "queues": ["default", "mail"],
        "jobs_succeeded": 12,
        "jobs_failed": 0,
        "candidates_lost": 3,
    }
    assert figures["candidates_lost"] == 3


def test_paused_queues_are_marked_in_both_forms_even_without_jobs() -> None:
    make_job()
    pause_queue("default", "deploy")
    pause_queue("empty")
    lines = stats().splitlines()
    assert lines[3].split()[0] == "default"
    assert lines[3].endswith("paused: deploy")
    assert lines[4].split()[0] == "empty"
    assert lines[4].endswith("paused")
    default, empty = json.loads(stats("--json"))["queues"]
    assert (default["paused"], default["paused_reason"], default["counts"]["READY"]) == (True, "deploy", 1)
    assert (empty["queue"], empty["paused"], empty["paused_reason"]) == ("empty", True, "")


def test_a_queue_not_paused_is_not_marked() -> None:
    make_job()
    [default] = json.loads(stats("--json"))["queues"]
    assert (default["paused"], default["paused_reason"]) == (False, None)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--watch", "0"], "argument --watch: 0 is not a number above 0"),
        (["--watch", "often"], "argument --watch: 'often' is not a number"),
    ],
)
def test_bad_options_are_usage_errors(args: list[str], error: str) -> None:
    with pytest.raises(CommandError, match=f"^Error: {error}$"):
        stats(*args)
