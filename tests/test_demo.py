from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client

from django_sqlqueue.models import Job, JobStatus
from testproject.demo.tasks import add


@pytest.fixture
def demo_env(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's processes must open this test's database."""
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))


@pytest.mark.slow
def test_the_demo_runs_headless(demo_env: None) -> None:
    out = StringIO()
    call_command("demo", jobs=120, producers=2, consumers=3, serve=False, stdout=out)
    output = out.getvalue()
    assert re.search(r"^consumer \d+ #records = \d+ - \[\d+", output, re.MULTILINE), output
    assert "summary: enqueued 120, done 120" in output
    assert "candidates lost to other consumers" in output
    assert output.splitlines()[-4:] == [
        "status | count",
        "FAILED | 3",
        "SUCCESSFUL | 120",
        "Demo superuser: demo / demo",
    ]
    assert Job.objects.filter(queue="demo", status=JobStatus.SUCCESSFUL).count() == 120
    failed = Job.objects.filter(queue="triage", status=JobStatus.FAILED)
    assert failed.count() == 3
    assert all(job.errors[0]["exception_class_path"] == "builtins.RuntimeError" for job in failed)
    user = get_user_model().objects.get(username="demo")
    assert user.is_superuser
    assert user.check_password("demo")


@pytest.mark.django_db
def test_the_page_enqueues_in_the_views_transaction(client: Client) -> None:
    response = client.post("/", {"a": 4, "b": 5})
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/jobs/{job.pk}/"
    assert (job.task, job.args, job.status) == (f"{add.__module__}.add", [4, 5], JobStatus.READY)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert '<meta http-equiv="refresh" content="1">' in page
    assert "Ready" in page


@pytest.mark.django_db
def test_the_job_page_stops_reloading_when_done(client: Client) -> None:
    job = Job.objects.enqueue(add, (1, 1))
    claimed = Job.objects.claim(worker_id="w")
    Job.objects.finish(worker_id="w", succeeded={claimed[0]: 2})
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "refresh" not in page
    assert "Result: <code>2</code>" in page


@pytest.mark.django_db
def test_a_bad_form_enqueues_nothing(client: Client) -> None:
    response = client.post("/", {"a": "x", "b": 5})
    assert response.status_code == 200
    assert Job.objects.count() == 0
