"""Pages that update themselves (``admin/refresh.py``): the overview, the job list and a
running job's page carry the note and script that update them, answer the refresh
header with a fragment of their figures, and refuse it as they refuse the page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, override_settings

from django_sqlqueue.admin.refresh import HEADER
from django_sqlqueue.models import JobStatus
from tests.support.admin_helpers import CHANGELIST, make_job, staff_client

pytestmark = pytest.mark.django_db

OVERVIEW = f"{CHANGELIST}overview/"
ASK = {HEADER: "1"}
NOTE = '<p id="sqlqueue-refresh" class="sqlqueue-refresh" data-every="5000" role="status" hidden></p>'
SCRIPT = '<script src="/static/django_sqlqueue/refresh.js" defer></script>'


def live_pages() -> list[str]:
    running = make_job(JobStatus.RUNNING, queue="mail")
    return [CHANGELIST, f"{CHANGELIST}{running.pk}/change/", OVERVIEW]


@pytest.mark.parametrize("page", range(3))
def test_a_live_page_carries_its_note_hidden_and_its_script(admin_client: Client, page: int) -> None:
    response = admin_client.get(live_pages()[page])
    html = response.content.decode()
    assert NOTE in html
    assert SCRIPT in html
    assert "<html" in html
    assert HEADER in response["Vary"]


@pytest.mark.parametrize("page", range(3))
def test_the_header_asks_for_the_fragment_of_figures(admin_client: Client, page: int) -> None:
    response = admin_client.get(live_pages()[page], headers=ASK)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert NOTE in html
    assert [
        "1 job\n</nav>",
        '<div class="form-row field-status_badge">',
        'data-sqlqueue-refresh="mail RUNNING"><a href',
    ][page] in html


def test_the_figures_are_fresh(admin_client: Client) -> None:
    job = make_job(JobStatus.RUNNING, queue="mail")
    assert ">Running</span>" in admin_client.get(CHANGELIST, headers=ASK).content.decode()
    make_job(JobStatus.FAILED, queue="mail")
    job.__class__.objects.filter(pk=job.pk).update(status=JobStatus.SUCCESSFUL)
    html = admin_client.get(CHANGELIST, headers=ASK).content.decode()
    assert ">Running</span>" not in html
    assert ">Successful</span>" in html
    assert "2 jobs" in html
    overview = admin_client.get(OVERVIEW, headers=ASK).content.decode()
    failed = f'<a href="{CHANGELIST}?queue=mail&amp;status__exact=FAILED">1</a>'
    assert f'data-sqlqueue-refresh="mail FAILED">{failed}' in overview


def test_a_job_not_running_does_not_update_and_its_fragment_says_to_stop(admin_client: Client) -> None:
    done = make_job(JobStatus.SUCCESSFUL)
    assert "sqlqueue-refresh" not in admin_client.get(f"{CHANGELIST}{done.pk}/change/").content.decode()
    fragment = admin_client.get(f"{CHANGELIST}{done.pk}/change/", headers=ASK).content.decode()
    assert "<html" not in fragment
    assert "sqlqueue-refresh" not in fragment
    assert "field-status_badge" in fragment


@override_settings(SQLQUEUE_ADMIN_REFRESH=None)
def test_the_setting_turns_it_off(admin_client: Client) -> None:
    for page in live_pages():
        assert "refresh.js" not in admin_client.get(page).content.decode()


@override_settings(SQLQUEUE_ADMIN_REFRESH=12)
def test_the_setting_sets_the_pace(admin_client: Client) -> None:
    assert 'data-every="12000"' in admin_client.get(OVERVIEW).content.decode()


def test_a_post_is_not_a_refresh(admin_client: Client) -> None:
    job = make_job(JobStatus.FAILED)
    response = admin_client.post(CHANGELIST, {"action": "retry", "_selected_action": [job.pk]}, headers=ASK)
    assert response.status_code == 302


@pytest.mark.parametrize("page", range(3))
def test_who_may_not_view_jobs_is_refused_the_fragment(django_user_model: Any, page: int) -> None:
    url = live_pages()[page]
    anonymous = Client().get(url, headers=ASK)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/admin/login/")
    assert b"sqlqueue" not in anonymous.content
    others = staff_client(django_user_model, "view_worker", "view_jobbatch")
    refused = others.get(url, headers=ASK)
    assert refused.status_code == 403
    assert b"sqlqueue-refresh" not in refused.content


@pytest.mark.parametrize("page", range(3))
def test_a_view_only_user_gets_the_figures_and_no_control(django_user_model: Any, page: int) -> None:
    viewer = staff_client(django_user_model, "view_job")
    html = viewer.get(live_pages()[page], headers=ASK).content.decode()
    assert NOTE in html
    assert "<form" not in html
    assert "action-select" not in html
    assert "csrfmiddlewaretoken" not in html
