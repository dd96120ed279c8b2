"""The queue overview page (``admin/overview.py``)."""

from __future__ import annotations

import datetime
import functools
import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from django_sqlqueue import pause_queue
from django_sqlqueue.admin import overview
from django_sqlqueue.admin.overview import queue_stats
from django_sqlqueue.admin.throughput import LAST_HOUR, LAST_WEEK
from django_sqlqueue.models import JobStatus, PausedQueue
from django_sqlqueue.reporting.counting import queue_counts
from tests.support.admin_helpers import CHANGELIST, make_job, messages_of, staff_client
from tests.support.charsets import column_in
from tests.unit.reporting.test_counting import analyze_on_postgresql

pytestmark = pytest.mark.django_db

OVERVIEW = f"{CHANGELIST}overview/"


def test_counts_by_status_per_queue() -> None:
    for status in (JobStatus.READY, JobStatus.READY, JobStatus.FAILED):
        make_job(status)
    make_job(JobStatus.SUCCESSFUL, queue="mail")
    default, mail = queue_stats()
    assert (default.queue, default.counts) == ("default", {JobStatus.READY: 2, JobStatus.FAILED: 1})
    assert (mail.queue, mail.counts) == ("mail", {JobStatus.SUCCESSFUL: 1})
    assert [count for _, _, count in default.by_status] == ["0", "2", "0", "0", "1", "0"]
    assert default.estimated == ()


def test_estimated_counts_read_a_tilde(monkeypatch: pytest.MonkeyPatch, admin_client: Client) -> None:
    monkeypatch.setattr(overview, "queue_counts", functools.partial(queue_counts, estimate_above=0))
    for status in (JobStatus.READY, JobStatus.FAILED, JobStatus.SUCCESSFUL) * 2:  # twice: common values
        make_job(status)
    analyze_on_postgresql()
    [default] = queue_stats()
    assert [count for _, _, count in default.by_status] == ["0", "2", "0", "~2", "~2", "~0"]
    page = admin_client.get(OVERVIEW).content.decode()
    assert 'status__exact=SUCCESSFUL">~2</a>' in page
    assert 'status__exact=READY">2</a>' in page


def test_lag_is_the_age_of_the_oldest_due_ready_job() -> None:
    now = timezone.now()
    make_job(run_at=now - datetime.timedelta(minutes=10))
    make_job(run_at=now - datetime.timedelta(minutes=3))
    make_job(run_at=now + datetime.timedelta(hours=1))  # not due: no lag
    make_job(JobStatus.FAILED, queue="mail", run_at=now - datetime.timedelta(days=1))  # not ready
    default, mail = queue_stats()
    assert default.lag is not None
    assert datetime.timedelta(minutes=10) <= default.lag < datetime.timedelta(minutes=11)
    assert default.lag_text.startswith("0:10:")
    assert (mail.lag, mail.lag_text) == (None, "-")


def test_each_queue_has_both_charts_even_without_finished_jobs() -> None:
    make_job(queue="mail")
    make_job(JobStatus.SUCCESSFUL, finished_at=timezone.now() - datetime.timedelta(days=2))
    default, mail = queue_stats()
    assert [chart.span for chart in default.charts] == [LAST_HOUR, LAST_WEEK]
    assert [(chart.total_succeeded, chart.total_failed) for chart in default.charts] == [(0, 0), (1, 0)]
    assert [(chart.total_succeeded, chart.total_failed, chart.bars) for chart in mail.charts] == [
        (0, 0, []),
        (0, 0, []),
    ]


def test_the_page(admin_client: Client) -> None:
    make_job(JobStatus.FAILED, queue="<b>q</b>", finished_at=timezone.now())
    page = admin_client.get(OVERVIEW).content.decode()
    assert '<tr class="queue" data-queue="&lt;b&gt;q&lt;/b&gt;">' in page
    assert f'<a href="{CHANGELIST}?queue=%3Cb%3Eq%3C/b%3E&amp;status__exact=FAILED">1</a>' in page
    assert "<title>0 succeeded, 1 failed, 0 min ago</title>" in page
    assert "<title>0 succeeded, 1 failed, 0 h ago</title>" in page
    assert "Last 7 days: <span" in page
    assert "<b>q</b>" not in page


def test_the_page_with_no_jobs(admin_client: Client) -> None:
    assert "No jobs." in admin_client.get(OVERVIEW).content.decode()


def test_the_changelist_links_to_it(admin_client: Client) -> None:
    assert f'href="{OVERVIEW}"' in admin_client.get(CHANGELIST).content.decode()


def test_a_paused_queue_shows_even_without_jobs() -> None:
    make_job()
    pause_queue("idle", "maintenance")
    default, idle = queue_stats()
    assert (default.queue, default.paused) == ("default", None)
    assert idle.paused is not None
    assert (idle.queue, idle.counts, idle.paused.reason) == ("idle", {}, "maintenance")


def test_the_pause_and_resume_buttons(admin_client: Client) -> None:
    make_job()
    page = admin_client.get(OVERVIEW).content.decode()
    assert 'class="pause-queue"' in page
    assert 'class="resume-queue"' not in page
    response = admin_client.post(f"{OVERVIEW}pause/", {"queue": "default", "reason": "deploy"}, follow=True)
    assert messages_of(response) == ["Paused queue 'default': workers stop claiming its jobs within a second."]
    assert PausedQueue.objects.get().reason == "deploy"
    page = response.content.decode()
    assert re.search(r"Paused <time [^>]*>now</time>: <span[^>]*>deploy</span>", page)
    assert 'class="resume-queue"' in page
    response = admin_client.post(f"{OVERVIEW}pause/", {"queue": "default"}, follow=True)
    assert messages_of(response) == ["Queue 'default' was already paused."]
    response = admin_client.post(f"{OVERVIEW}resume/", {"queue": "default"}, follow=True)
    assert messages_of(response) == ["Resumed queue 'default'."]
    assert not PausedQueue.objects.exists()


def test_a_bad_queue_name_is_an_error_message(admin_client: Client) -> None:
    response = admin_client.post(f"{OVERVIEW}pause/", {"queue": ""}, follow=True)
    assert messages_of(response) == ["a queue name must be a non-empty string, not ''."]
    assert not PausedQueue.objects.exists()


def test_each_button_takes_its_own_permission(django_user_model: Any) -> None:
    make_job()
    pauser = staff_client(django_user_model, "view_job", "pause_queue")
    page = pauser.get(OVERVIEW).content.decode()
    assert 'class="pause-queue"' in page
    assert pauser.post(f"{OVERVIEW}pause/", {"queue": "default"}).status_code == 302
    page = pauser.get(OVERVIEW).content.decode()
    assert 'class="resume-queue"' not in page  # may pause, not resume
    assert pauser.post(f"{OVERVIEW}resume/", {"queue": "default"}).status_code == 403
    assert PausedQueue.objects.filter(queue="default").exists()


def test_a_viewer_sees_no_buttons_and_may_not_post(django_user_model: Any) -> None:
    make_job()
    viewer = staff_client(django_user_model, "view_job")
    assert 'class="pause-queue"' not in viewer.get(OVERVIEW).content.decode()
    assert viewer.post(f"{OVERVIEW}pause/", {"queue": "default"}).status_code == 403
    assert viewer.get(f"{OVERVIEW}pause/").status_code == 405
    assert not PausedQueue.objects.exists()


@pytest.mark.skipif(connection.vendor != "mysql", reason="only MySQL/MariaDB tables have character sets")
@pytest.mark.django_db(transaction=True)
def test_a_reason_the_table_cannot_store_is_an_error_message(admin_client: Client) -> None:
    # Before: a 500, from the raw OperationalError 1366 on a latin1 table in strict mode.
    with column_in("latin1", PausedQueue._meta.db_table, "reason"):
        response = admin_client.post(f"{OVERVIEW}pause/", {"queue": "default", "reason": "провайдер"}, follow=True)
    [message] = messages_of(response)
    assert message.startswith("Cannot store the pause of queue 'default': reason 'провайдер' holds 'п' (U+043F)")
    assert not PausedQueue.objects.exists()
