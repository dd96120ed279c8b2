"""The queue overview page (``admin/overview.py``)."""

from __future__ import annotations

import datetime

import pytest
from django.test import Client
from django.utils import timezone

from django_sqlqueue.admin.overview import MINUTES, queue_stats
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


def test_jobs_finished_per_minute_over_the_last_hour() -> None:
    now = timezone.now()
    for minutes_ago in (0, 0, 5, 59.5, 61):
        make_job(JobStatus.SUCCESSFUL, finished_at=now - datetime.timedelta(minutes=minutes_ago))
    make_job(JobStatus.FAILED, finished_at=now - datetime.timedelta(minutes=5))
    [default] = queue_stats()
    # Buckets are whole minutes of the database's clock: the job 59.5 minutes ago falls in
    # the oldest bucket or just before it, the one 61 minutes ago never counts.
    assert default.finished_last_hour in (4, 5)
    assert sum(default.per_minute[-2:]) >= 2
    assert sum(default.per_minute[MINUTES - 7 : MINUTES - 4]) == 2
    bars = default.bars
    assert len(bars) == MINUTES
    assert max(bar.height for bar in bars) == 32


def test_the_page(admin_client: Client) -> None:
    make_job(JobStatus.FAILED, queue="<b>q</b>", finished_at=timezone.now())
    page = admin_client.get(OVERVIEW).content.decode()
    assert '<tr class="queue" data-queue="&lt;b&gt;q&lt;/b&gt;">' in page
    assert f'<a href="{CHANGELIST}?queue=%3Cb%3Eq%3C/b%3E&amp;status__exact=FAILED">1</a>' in page
    assert "<title>1 finished 0 min ago</title>" in page
    assert "<b>q</b>" not in page


def test_the_page_with_no_jobs(admin_client: Client) -> None:
    assert "No jobs." in admin_client.get(OVERVIEW).content.decode()


def test_the_changelist_links_to_it(admin_client: Client) -> None:
    assert f'href="{OVERVIEW}"' in admin_client.get(CHANGELIST).content.decode()
