"""A job's page shows its workflow (``admin/workflow.py``): what it waits for and what
waits on it, with their statuses; and the changelist filters the waiting jobs."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.html import strip_tags

from django_sqlqueue.admin import workflow
from django_sqlqueue.models import Job
from tests.support.admin_helpers import CHANGELIST
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db


def test_a_jobs_page_shows_what_it_waits_for_and_what_waits_on_it(admin_client: Client) -> None:
    parent = Job.objects.enqueue(noop)
    gone = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent, gone])
    Job.objects.filter(pk=gone.pk).delete()
    page = admin_client.get(f"{CHANGELIST}{child.pk}/change/").content.decode()
    assert f'<a href="{CHANGELIST}{parent.pk}/change/">#{parent.pk}</a>' in page
    assert f"#{parent.pk} Ready, #{gone.pk} (deleted)" in strip_tags(page)
    page = admin_client.get(f"{CHANGELIST}{parent.pk}/change/").content.decode()
    assert f"#{child.pk} Waiting" in strip_tags(page)
    assert "Waiting" in strip_tags(admin_client.get(f"{CHANGELIST}?status__exact=WAITING").content.decode())


def test_a_long_list_says_how_many_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workflow, "SHOWN", 2)
    parents = Job.objects.enqueue_many([Job.objects.build(noop) for _ in range(5)])
    child = Job.objects.enqueue(noop, after=parents)
    shown = strip_tags(workflow.linked_jobs(child.dependencies.order_by("parent_id"), "parent"))
    assert shown == f"#{parents[0].pk} Ready, #{parents[1].pk} Ready and 3 more"
    assert workflow.linked_jobs(parents[0].dependencies.all(), "parent") == "-"
