"""The queue overview page (``admin/overview.py``)."""

from __future__ import annotations

import datetime

import pytest
from django.test import Client
from django.utils import timezone

from django_sqlqueue.admin.overview import queue_stats
from django_sqlqueue.admin.throughput import LAST_HOUR, LAST_WEEK
from django_sqlqueue.models import JobStatus
from tests.support.admin_helpers import CHANGELIST, make_job

pytestmark = pytest.mark.django_db

OVERVIEW = f"{CHANGELIST}overview/"


def test_counts_by_status_per_queue() -> None:
    for status in (JobStatus.READY, JobStatus.READY, JobStatus.FAILED):
        make_job(status)
    make_job(JobStatus.SUCCESSFUL, queue="mail")
    default, mail = queue_stats()
    assert (default.queue, default.counts) == ("default", {JobStatus.READY: 2, JobStatus.FAILED: 1})
    assert (mail.queue, mail.counts) == ("mail", {JobStatus.SUCCESSFUL: 1})
    assert [count for _, _, count in default.by_status] == [2, 0, 0, 1, 0]


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
    assert "Last 7 days, per hour" in page
    assert "<b>q</b>" not in page


def test_the_page_with_no_jobs(admin_client: Client) -> None:
    assert "No jobs." in admin_client.get(OVERVIEW).content.decode()


def test_the_changelist_links_to_it(admin_client: Client) -> None:
    assert f'href="{OVERVIEW}"' in admin_client.get(CHANGELIST).content.decode()
