"""The overview's charts: jobs succeeded and failed per minute and per hour."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from django_sqlqueue.admin.throughput import CHART_HEIGHT, LAST_HOUR, LAST_WEEK, Chart, throughput
from django_sqlqueue.models import Job, JobStatus
from tests.support.admin_helpers import make_job

pytestmark = pytest.mark.django_db


def test_per_minute_over_the_last_hour() -> None:
    now = timezone.now()
    for minutes_ago in (0, 0, 5, 59.5, 61):
        make_job(JobStatus.SUCCESSFUL, finished_at=now - datetime.timedelta(minutes=minutes_ago))
    make_job(JobStatus.FAILED, finished_at=now - datetime.timedelta(minutes=5))
    make_job(JobStatus.CANCELLED, finished_at=now)  # neither
    make_job(JobStatus.READY)
    make_job(JobStatus.FAILED, queue="mail", finished_at=now - datetime.timedelta(hours=2))  # the week only
    charts = throughput(Job.objects.get_queryset(), LAST_HOUR)
    assert list(charts) == ["default"]
    default = charts["default"]
    # Buckets are whole minutes of the database's clock: the job 59.5 minutes ago falls in
    # the oldest bucket or just before it, the one 61 minutes ago never counts.
    assert default.total_succeeded in (3, 4)
    assert default.total_failed == 1
    assert sum(default.succeeded[-2:]) >= 2
    assert (sum(default.succeeded[-7:-4]), sum(default.failed[-7:-4])) == (1, 1)
    assert len(default.succeeded) == len(default.failed) == 60


def test_per_hour_over_the_last_7_days() -> None:
    now = timezone.now()
    for hours_ago in (0, 1.5, 1.5, 100, 24 * 7 + 2):
        make_job(JobStatus.SUCCESSFUL, queue="mail", finished_at=now - datetime.timedelta(hours=hours_ago))
    make_job(JobStatus.FAILED, queue="mail", finished_at=now - datetime.timedelta(hours=100))
    mail = throughput(Job.objects.get_queryset(), LAST_WEEK)["mail"]
    assert (mail.total_succeeded, mail.total_failed, len(mail.succeeded)) == (4, 1, 24 * 7)
    assert sum(mail.succeeded[-3:-1]) == 2  # 1.5 hours ago: one or two whole hours back
    assert (sum(mail.succeeded[-102:-99]), sum(mail.failed[-102:-99])) == (1, 1)


def test_bars_stack_failed_on_succeeded_scaled_to_the_peak() -> None:
    chart = Chart(LAST_HOUR)
    chart.succeeded[-1], chart.failed[-1] = 6, 2
    chart.succeeded[0] = 4
    assert chart.peak == 8
    oldest, newest = chart.bars
    assert (oldest.ago, oldest.x, oldest.succeeded_height, oldest.failed_height) == (59, 0, CHART_HEIGHT / 2, 0)
    assert (newest.ago, newest.succeeded, newest.failed) == (0, 6, 2)
    assert newest.succeeded_y + newest.succeeded_height == CHART_HEIGHT
    assert newest.failed_y == 0
    assert newest.x == pytest.approx(59 * LAST_HOUR.bar_width)


def test_an_empty_chart_has_no_bars() -> None:
    assert (Chart(LAST_WEEK).bars, Chart(LAST_WEEK).peak) == ([], 0)
