"""The worker admin (``admin/workers.py``)."""

from __future__ import annotations

import datetime
import re

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.test import Client
from django.utils import timezone

from django_sqlqueue.db import leadership
from django_sqlqueue.models import JobStatus, Worker
from tests.support.admin_helpers import CHANGELIST, make_job

pytestmark = pytest.mark.django_db

WORKERS = "/admin/django_sqlqueue/worker/"


@pytest.fixture
def workers() -> tuple[Worker, Worker]:
    alive = Worker.objects.create(name="host:1:0", host="host", pid=1, queues=["mail"])
    dead = Worker.objects.create(name="host:2:0", host="host", pid=2)
    Worker.objects.filter(pk=dead.pk).update(heartbeat_at=timezone.now() - datetime.timedelta(hours=1))
    for _ in range(2):
        make_job(JobStatus.RUNNING, worker=alive.name)
    make_job(JobStatus.SUCCESSFUL, worker=alive.name)
    return alive, dead


def test_the_list_shows_heartbeats_and_running_jobs(admin_client: Client, workers: tuple[Worker, Worker]) -> None:
    page = admin_client.get(WORKERS).content.decode()
    running = f"{CHANGELIST}?worker=host%3A1%3A0&amp;status__exact=RUNNING"
    assert f'<td class="field-running"><a href="{running}">2</a></td>' in page
    assert '<td class="field-queues_shown"><span class="sqlqueue-long">mail</span></td>' in page
    assert '<td class="field-queues_shown">all</td>' in page
    alive = re.findall(r'<td class="field-is_alive"><img [^>]*alt="(True|False)"', page)
    assert sorted(alive) == ["False", "True"]


def test_filter_alive_and_dead(admin_client: Client, workers: tuple[Worker, Worker]) -> None:
    alive, dead = workers
    assert list(admin_client.get(WORKERS + "?alive=yes").context["cl"].result_list) == [alive]
    assert list(admin_client.get(WORKERS + "?alive=no").context["cl"].result_list) == [dead]


def test_the_link_lists_the_jobs_it_holds(admin_client: Client, workers: tuple[Worker, Worker]) -> None:
    alive, _ = workers
    response = admin_client.get(f"{CHANGELIST}?worker={alive.name}&status__exact=RUNNING")
    assert len(response.context["cl"].result_list) == 2


def test_the_page_lists_its_jobs(admin_client: Client, workers: tuple[Worker, Worker]) -> None:
    alive, _ = workers
    page = admin_client.get(f"{WORKERS}{alive.pk}/change/").content.decode()
    assert page.count('<li><a href="/admin/django_sqlqueue/job/') == 2


def test_workers_are_read_only(admin_client: Client, workers: tuple[Worker, Worker]) -> None:
    alive, _ = workers
    assert admin_client.get(f"{WORKERS}add/").status_code == 403
    assert admin_client.post(f"{WORKERS}{alive.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Worker.objects.count() == 2


def test_the_list_says_which_supervisor_leads(admin_client: Client, workers: tuple[Worker, Worker]) -> None:
    page = admin_client.get(WORKERS).content.decode()
    assert "No supervisor holds the maintenance lease" in page
    leadership.acquire("host:1", datetime.timedelta(seconds=60), DEFAULT_DB_ALIAS)
    response = admin_client.get(WORKERS)
    assert "Supervisor host:1 leads maintenance (rescue, recurring jobs, pruning)." in response.content.decode()
    leads = {worker.name: worker.leads for worker in response.context["cl"].result_list}
    assert leads == {"host:1:0": True, "host:2:0": False}


def test_the_list_says_when_a_web_process_with_embedded_workers_leads(admin_client: Client) -> None:
    Worker.objects.create(name="embedded:host:3:1:ab12", host="host", pid=3)
    leadership.acquire("embedded:host:3", datetime.timedelta(seconds=60), DEFAULT_DB_ALIAS)
    response = admin_client.get(WORKERS)
    assert (
        "Web process embedded:host:3 leads maintenance (rescue, recurring jobs, pruning)." in response.content.decode()
    )
    assert [(worker.name, worker.leads) for worker in response.context["cl"].result_list] == [
        ("embedded:host:3:1:ab12", True)
    ]


def test_the_browser_title_is_the_pages_name(admin_client: Client, workers: tuple[Worker, Worker]) -> None:
    """The lead's sentence (a warning when no supervisor holds the lease) is under the
    page's heading, not in the browser's tab."""
    page = admin_client.get(WORKERS).content.decode()
    [title] = re.findall(r"<title>(.*?)</title>", page, re.S)
    assert title == "Workers | Django site admin"
    assert "<h1>Workers</h1>" in page
    assert "<h2>No supervisor holds the maintenance lease: no runworkers (nor web process" in page
