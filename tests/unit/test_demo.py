"""The demo's pages (``testproject.demo``): enqueue a job in a view, watch it run."""

from __future__ import annotations

import shlex
import socket
import sys

import pytest
from django.core.management import CommandError
from django.test import Client

from django_sqlqueue.models import Job, JobStatus, Worker
from testproject.demo.management.commands.demo import Command
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


@pytest.mark.django_db
def test_without_a_live_worker_the_pages_give_the_command_for_their_own_interpreter(client: Client) -> None:
    """As after ``manage.py demo --no-workers``: the command to type, with this Python."""
    job = Job.objects.enqueue(add, (1, 1))
    command = f"<code>{shlex.join([sys.executable, 'manage.py', 'runworkers'])}</code>"
    assert command in client.get("/").content.decode()
    assert command in client.get(f"/jobs/{job.pk}/").content.decode()
    Worker.objects.create(name="here:1:0", host="here", pid=1)
    assert "No worker is running" not in client.get("/").content.decode()
    assert "No worker is running" not in client.get(f"/jobs/{job.pk}/").content.decode()


def test_a_busy_port_is_refused_before_any_worker_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """runserver would end the process at once on it, leaving the workers behind."""
    monkeypatch.setattr("subprocess.Popen", None)  # starting one would fail this test
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        with pytest.raises(CommandError, match=f"Port {port} is not free .*: pass another with --port"):
            Command()._serve(port, workers=True)
