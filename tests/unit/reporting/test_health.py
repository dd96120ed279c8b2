"""Whether the queue is working (``health.py``) and ``manage.py sqlqueue_health``, which
says so; the same against real workers and a database that is down is in
``tests/integration/management/commands/test_sqlqueue_health.py``."""

from __future__ import annotations

import datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from django_sqlqueue.models import Job, Worker
from django_sqlqueue.reporting.health import health
from tests.testapp.tasks import noop, report

pytestmark = pytest.mark.django_db


def alive_worker(name: str = "w1") -> Worker:
    return Worker.objects.create(name=name, host="here", pid=1)


def health_check(*args: str) -> str:
    out = StringIO()
    call_command("sqlqueue_health", *args, stdout=out)
    return out.getvalue()


def test_healthy_with_a_worker_and_no_lag() -> None:
    alive_worker()
    Job.objects.enqueue(noop, delay=3600)  # not due: no lag
    assert health_check("--max-lag", "60") == "OK: 1 worker process(es) alive; the oldest due job has waited 0 s.\n"


def test_a_worker_past_its_lease_is_not_alive(settings: object) -> None:
    alive_worker("old")
    Worker.objects.update(heartbeat_at=timezone.now() - datetime.timedelta(hours=1))
    with pytest.raises(CommandError) as excinfo:
        health_check()
    assert (str(excinfo.value), excinfo.value.returncode) == ("0 worker process(es) alive, fewer than 1.", 1)
    assert health_check("--min-workers", "0").startswith("OK: 0 worker process(es) alive;")


def test_each_lagging_queue_is_a_problem_of_its_own() -> None:
    alive_worker()
    an_hour_ago = timezone.now() - datetime.timedelta(hours=1)
    for task in (noop, report):
        job = Job.objects.enqueue(task, ["x"])
        Job.objects.filter(pk=job.pk).update(run_at=an_hour_ago)
    Job.objects.enqueue(noop, queue="fresh")
    with pytest.raises(CommandError) as excinfo:
        health_check("--max-lag", "600", "--min-workers", "2")
    lines = str(excinfo.value).splitlines()
    assert lines[0] == "1 worker process(es) alive, fewer than 2."
    assert [line.split(":")[0] for line in lines[1:]] == ["Queue 'default'", "Queue 'reports'"]
    assert all(line.endswith("more than 600 s.") for line in lines[1:])
    assert 3590 < float(lines[1].split("waited ")[1].split(" s")[0]) < 3700
    # Without --max-lag, lag is not asked.
    assert health_check().startswith("OK: 1 worker process(es) alive; the oldest due job has waited 36")


def test_unapplied_migrations_are_the_only_problem() -> None:
    latest = MigrationRecorder.Migration.objects.filter(app="django_sqlqueue").latest("name")
    latest.delete()
    found = health(min_workers=5, max_lag=None)
    assert found.problems == [f"The queue's migrations are not applied ({latest.name}): run manage.py migrate."]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--max-lag", "0"], "argument --max-lag: 0 is not a number above 0"),
        (["--max-lag", "inf"], "argument --max-lag: inf is not a number above 0"),
        (["--max-lag", "soon"], "argument --max-lag: 'soon' is not a number"),
        (["--min-workers", "-1"], "argument --min-workers: -1 is less than 0"),
    ],
)
def test_bad_options_are_usage_errors(args: list[str], error: str) -> None:
    with pytest.raises(CommandError, match=f"^Error: {error}$"):
        health_check(*args)
