"""A workflow drawn on the job's and the batch's pages (``admin/graph.py``): what is
read (a bounded number of queries), what is drawn, and who may see it."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from django_sqlqueue import workflows
from django_sqlqueue.admin import graph
from django_sqlqueue.models import Job, JobBatch, JobStatus
from tests.support.admin_helpers import CHANGELIST, staff_client
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db

BATCHES = "/admin/django_sqlqueue/jobbatch/"


def fan(width: int, **options: Any) -> tuple[Job, list[Job], Job]:
    """A root, ``width`` jobs after it, and a last job after them all."""
    root = Job.objects.enqueue(noop, **options)
    middle, last = workflows.chord(
        [Job.objects.build(noop, after=[root], **options) for _ in range(width)], Job.objects.build(noop, **options)
    )
    return root, middle, last


def test_a_jobs_page_draws_its_workflow_with_each_status() -> None:
    first, _second, third = workflows.chain([Job.objects.build(noop) for _ in range(3)])
    Job.objects.filter(pk=first.pk).update(status=JobStatus.FAILED)
    drawn = str(graph.drawing(graph.job_workflow(third), focus=third.pk, group_url=graph.ids_url))
    assert drawn.count("<line ") == 2
    assert (
        f'<a href="{CHANGELIST}{first.pk}/change/" aria-label="Job #{first.pk} tests.testapp.tasks.noop, Failed">'
        in drawn
    )
    assert f"Job #{third.pk} tests.testapp.tasks.noop, Waiting (this job)" in drawn
    assert 'class="sqlqueue-graph-focus"' in drawn
    assert ">Failed</span>" in drawn
    assert ">Waiting</span>" in drawn


def test_a_job_with_no_link_draws_nothing() -> None:
    job = Job.objects.enqueue(noop)
    assert graph.job_workflow(job).jobs == {}
    assert graph.drawing(graph.job_workflow(job), group_url=graph.ids_url) == "-"


def test_a_deleted_job_of_a_workflow_is_drawn_as_deleted() -> None:
    parent = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent])
    Job.objects.filter(pk=parent.pk).delete()
    found = graph.job_workflow(child)
    assert found.jobs[parent.pk].status is None
    assert "deleted" in str(graph.drawing(found, focus=child.pk, group_url=graph.ids_url))


def test_a_workflow_of_a_thousand_jobs_is_read_in_a_few_queries_and_drawn_small() -> None:
    _root, middle, _last = fan(998)
    with CaptureQueriesContext(connection) as queries:
        found = graph.job_workflow(middle[10])
    assert len(found.jobs) == 1000
    assert not found.more
    # Three steps of links (up, down, and beyond), two queries each, then the statuses.
    assert len(queries) <= 12
    drawn = str(graph.drawing(found, focus=middle[10].pk, group_url=graph.ids_url))
    assert len(drawn) < 20_000
    assert "998" not in drawn.split("<svg")[0]
    assert "<title>997 jobs of tests.testapp.tasks.noop, Waiting</title>" in drawn
    assert ">997 \N{MULTIPLICATION SIGN} …" in drawn  # the task cut at its start
    assert f"?id__in={middle[0].pk}%2C{middle[1].pk}" in drawn


def test_the_reading_stops_at_its_limits_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = workflows.chain([Job.objects.build(noop) for _ in range(12)])
    monkeypatch.setattr(graph, "STEPS", 3)
    found = graph.job_workflow(steps[0])
    assert sorted(found.jobs) == [job.pk for job in steps[:4]]
    assert found.more
    assert "the workflow has more" in str(graph.drawing(found, group_url=graph.ids_url))
    monkeypatch.setattr(graph, "STEPS", 30)
    monkeypatch.setattr(graph, "MOST_JOBS", 5)
    found = graph.job_workflow(steps[0])
    assert len(found.jobs) == 5
    assert found.more


def test_a_batch_is_read_in_a_few_queries_and_its_groups_link_their_list() -> None:
    with Job.objects.batch() as batch:
        fan(998)
    with CaptureQueriesContext(connection) as queries:
        found = graph.batch_workflow(batch.pk)
    assert len(found.jobs) == 1000
    assert len(found.links) == 998 * 2
    assert len(queries) <= 3
    drawn = str(graph.drawing(found, group_url=graph.batch_url(batch.pk)))
    assert f"{CHANGELIST}?batch_id={batch.pk}&amp;task=tests.testapp.tasks.noop&amp;status__exact=WAITING" in drawn


def test_the_pages_draw_it(admin_client: Client) -> None:
    with Job.objects.batch() as batch:
        _root, _middle, last = fan(3)
    page = admin_client.get(f"{CHANGELIST}{last.pk}/change/").content.decode()
    assert page.count('<div class="sqlqueue-graph">') == 1
    assert page.count("<line ") == 6
    page = admin_client.get(f"{BATCHES}{batch.pk}/change/").content.decode()
    assert page.count('<div class="sqlqueue-graph">') == 1
    assert page.count("<rect ") == 5


def test_only_who_may_view_jobs_sees_the_graph(django_user_model: Any) -> None:
    with Job.objects.batch() as batch:
        _root, _middle, last = fan(2)
    batches_only = staff_client(django_user_model, "view_jobbatch")
    page = batches_only.get(f"{BATCHES}{batch.pk}/change/")
    assert page.status_code == 200
    assert "sqlqueue-graph" not in page.content.decode()
    assert batches_only.get(f"{CHANGELIST}{last.pk}/change/").status_code == 403
    both = staff_client(django_user_model, "view_jobbatch", "view_job", username="viewer")
    assert "sqlqueue-graph" in both.get(f"{BATCHES}{batch.pk}/change/").content.decode()
    assert "sqlqueue-graph" in both.get(f"{CHANGELIST}{last.pk}/change/").content.decode()
    assert Client().get(f"{CHANGELIST}{last.pk}/change/").status_code == 302  # to the login page
    assert JobBatch.objects.filter(pk=batch.pk).exists()
