"""The demo's pages (``testproject.demo``): enqueue a job in a view, watch it run."""

from __future__ import annotations

import pytest
from django.test import Client

from django_sqlqueue.models import Job, JobStatus
from testproject.demo.tasks import add


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
