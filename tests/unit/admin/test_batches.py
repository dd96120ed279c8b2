"""The batch admin (``admin/batches.py``): counts, callbacks and the link to its jobs;
read-only; a job's page links its batch."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from django_sqlqueue.models import Job, JobBatch
from django_sqlqueue.testing import run_jobs
from tests.support.admin_helpers import CHANGELIST
from tests.testapp.tasks import batch_done, noop

pytestmark = pytest.mark.django_db

BATCHES = "/admin/django_sqlqueue/jobbatch/"


@pytest.fixture
def batch() -> JobBatch:
    with Job.objects.batch(
        on_success=(batch_done, ("ok",)), on_failure=(batch_done, ("ko",)), description="thumbnails"
    ) as made:
        Job.objects.enqueue_many([Job.objects.build(noop) for _ in range(3)])
    return JobBatch.objects.get(pk=made.pk)


def test_the_list_shows_counts(admin_client: Client, batch: JobBatch) -> None:
    page = admin_client.get(BATCHES).content.decode()
    assert "thumbnails" in page
    assert '<td class="field-total">3</td>' in page
    assert '<td class="field-pending">3</td>' in page


def test_the_page_shows_callbacks_before_and_after_and_links_its_jobs(admin_client: Client, batch: JobBatch) -> None:
    page = admin_client.get(f"{BATCHES}{batch.pk}/change/").content.decode()
    assert f'<a href="{CHANGELIST}?batch_id={batch.pk}">its 3 jobs</a>' in page
    assert "<b>on_success</b>: tests.testapp.tasks.batch_done &rarr; when it finishes" in page
    run_jobs()
    batch.refresh_from_db()
    page = admin_client.get(f"{BATCHES}{batch.pk}/change/").content.decode()
    ok = batch.callback_jobs["on_success"]
    assert f'<a href="/admin/django_sqlqueue/job/{ok}/change/">job #{ok}</a>' in page
    assert "<b>on_failure</b>: tests.testapp.tasks.batch_done &rarr; not enqueued (did not apply)" in page
    jobs = admin_client.get(f"{CHANGELIST}?batch_id={batch.pk}")
    assert len(jobs.context["cl"].result_list) == 3


def test_a_job_page_links_its_batch(admin_client: Client, batch: JobBatch) -> None:
    job = Job.objects.filter(batch_id=batch.pk).first()
    assert job is not None
    page = admin_client.get(f"{CHANGELIST}{job.pk}/change/").content.decode()
    assert f'<a href="{BATCHES}{batch.pk}/change/">batch {batch.pk}</a>' in page


def test_read_only_and_behind_the_view_permission(client: Client, admin_client: Client, batch: JobBatch) -> None:
    page = admin_client.get(f"{BATCHES}{batch.pk}/change/").content.decode()
    assert 'name="_save"' not in page
    assert admin_client.get(f"{BATCHES}{batch.pk}/delete/").status_code == 403
    assert admin_client.get(f"{BATCHES}add/").status_code == 403
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get(BATCHES).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_jobbatch"))
    assert client.get(BATCHES).status_code == 200
