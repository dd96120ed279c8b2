"""The schedules admin (``admin/schedules.py``): the list, and disable, enable and run now."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.test import Client, override_settings

from django_sqlqueue.db import recurrence
from django_sqlqueue.models import Job, Schedule
from django_sqlqueue.rules.recurrence import parse_schedule
from tests.support.admin_helpers import messages_of, staff_client
from tests.support.zones import stored

pytestmark = pytest.mark.django_db

SCHEDULES = "/admin/django_sqlqueue/schedule/"
NOOP = "tests.testapp.tasks.noop"


@pytest.fixture
def rows() -> list[Schedule]:
    recurrence.sync(
        parse_schedule(
            {
                "nightly": {"task": NOOP, "cron": "0 3 * * *", "tz": "Europe/Paris"},
                "ping": {"task": NOOP, "every": 30, "kwargs": {"a": 1}},
            },
            "UTC",
        ),
        DEFAULT_DB_ALIAS,
    )
    return list(Schedule.objects.order_by("key"))


def act(client: Client, name: str, rows: list[Schedule]) -> Any:
    data = {"action": name, "index": "0", "_selected_action": [str(row.pk) for row in rows]}
    return client.post(SCHEDULES, data, follow=True)


def test_the_list_shows_expression_next_tick_and_last_job(admin_client: Client, rows: list[Schedule]) -> None:
    job = recurrence.run_now(rows[1], DEFAULT_DB_ALIAS)
    page = admin_client.get(SCHEDULES).content.decode()
    assert '<td class="field-expression">0 3 * * *</td>' in page
    assert '<td class="field-next_tick"><time class="sqlqueue-time"' in page
    assert f'<a href="/admin/django_sqlqueue/job/{job.pk}/change/">#{job.pk}</a>' in page


@pytest.mark.parametrize("use_tz", [True, False])
@pytest.mark.parametrize("time_zone", ["UTC", "America/New_York"])
def test_times_are_shown_in_the_entrys_zone_whatever_the_projects(
    admin_client: Client, rows: list[Schedule], use_tz: bool, time_zone: str
) -> None:
    """``0 3 * * *`` in Europe/Paris reads 03:00 on both sides of the night its clocks go back."""
    utc = datetime.timezone.utc
    with override_settings(USE_TZ=use_tz, TIME_ZONE=time_zone):
        Schedule.objects.filter(key="nightly").update(
            last_run_at=stored(datetime.datetime(2026, 10, 24, 1, tzinfo=utc)),
            next_tick_at=stored(datetime.datetime(2026, 10, 25, 2, tzinfo=utc)),
        )
        listed = admin_client.get(SCHEDULES).content.decode()
        detail = admin_client.get(f"{SCHEDULES}{rows[0].pk}/change/").content.decode()
    # Relative in the list and on the page; exact, in the entry's zone, on hover.
    for page in (listed, detail):
        assert 'datetime="2026-10-25T03:00:00+01:00" title="2026-10-25 03:00:00 CET (Europe/Paris)"' in page
        assert 'datetime="2026-10-24T03:00:00+02:00" title="2026-10-24 03:00:00 CEST (Europe/Paris)"' in page
    assert '<td class="field-last_run">never</td>' in listed  # ping has not run


def test_disable_and_enable(admin_client: Client, rows: list[Schedule]) -> None:
    assert messages_of(act(admin_client, "disable", rows)) == ["Disabled 2 schedule(s)."]
    assert not Schedule.objects.filter(enabled=True).exists()
    response = act(admin_client, "enable", rows[:1])
    assert messages_of(response) == ["Enabled 1 schedule(s); they run from their next tick."]
    assert list(Schedule.objects.filter(enabled=True)) == rows[:1]


def test_run_now_enqueues_one_job_each(admin_client: Client, rows: list[Schedule]) -> None:
    response = act(admin_client, "run_now", rows[1:])
    job = Job.objects.get()
    assert messages_of(response) == [f"Enqueued 1 job(s): #{job.pk}."]
    assert (job.task, job.kwargs) == (NOOP, {"a": 1})


def test_actions_need_their_permissions(django_user_model: Any, rows: list[Schedule]) -> None:
    client = staff_client(django_user_model, "view_schedule", "run_schedule_now")
    act(client, "disable", rows)
    assert Schedule.objects.filter(enabled=True).count() == 2
    act(client, "run_now", rows)
    assert Job.objects.count() == 2
