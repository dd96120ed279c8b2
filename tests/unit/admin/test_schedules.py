"""The schedules admin (``admin/schedules.py``): the list, disable, enable and run now,
the schedules defined in the admin beside the settings' read-only ones, and who may edit them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.test import Client, override_settings

from django_sqlqueue.db import recurrence
from django_sqlqueue.models import Job, JobStatus, Schedule
from django_sqlqueue.rules.recurrence import parse_schedule
from tests.support.admin_helpers import messages_of, staff_client
from tests.support.zones import stored
from tests.unit.admin.test_schedule_form import fields
from tests.unit.db.test_recurrence import rewind

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


def defined_here(client: Client, key: str = "welcome", **changes: str) -> Schedule:
    """A schedule added through the admin's form (a welcome every minute, or ``changes``)."""
    response = client.post(f"{SCHEDULES}add/", fields(key=key, **changes))
    assert response.status_code == 302, response.context["adminform"].form.errors
    return Schedule.objects.get(key=key)


def edit(client: Client, row: Schedule, **changes: str) -> Any:
    return client.post(f"{SCHEDULES}{row.pk}/change/", fields(key=row.key, **changes))


def test_an_edit_is_enqueued_by_the_next_tick_without_a_restart(admin_client: Client) -> None:
    row = defined_here(admin_client)
    rewind("welcome", 3601)
    assert recurrence.tick(DEFAULT_DB_ALIAS) == 1
    assert edit(admin_client, row, kwargs='{"user_id": 2, "greeting": "Hi"}').status_code == 302
    assert recurrence.tick(DEFAULT_DB_ALIAS) == 0  # the tick that fired is not fired again
    rewind("welcome", 3601)
    assert recurrence.tick(DEFAULT_DB_ALIAS) == 1
    assert [job.kwargs for job in Job.objects.order_by("pk")] == [{"user_id": 1}, {"user_id": 2, "greeting": "Hi"}]
    row = Schedule.objects.get()
    assert row.revision == 1
    assert row.recent_jobs == list(Job.objects.order_by("-pk").values_list("pk", flat=True))


def test_an_edit_of_when_it_runs_ticks_from_the_edit_on(admin_client: Client) -> None:
    row = defined_here(admin_client, missed="all")
    rewind("welcome", 3 * 3600)  # three hours of ticks not yet fired
    assert edit(admin_client, row, every="", cron="0 * * * *", missed="all").status_code == 302
    row = Schedule.objects.get()
    assert (row.expression, row.cron, row.every) == ("0 * * * *", "0 * * * *", None)
    assert recurrence.tick(DEFAULT_DB_ALIAS) == 0
    assert row.next_tick_at is not None
    assert row.next_tick_at.minute == 0


def test_disabled_in_the_form_or_by_the_action_it_enqueues_nothing(admin_client: Client) -> None:
    row = defined_here(admin_client)
    assert edit(admin_client, row, enabled="").status_code == 302
    rewind("welcome", 7200)
    assert recurrence.tick(DEFAULT_DB_ALIAS) == 0
    assert edit(admin_client, row).status_code == 302  # enabled again: from now on
    assert recurrence.tick(DEFAULT_DB_ALIAS) == 0
    assert messages_of(act(admin_client, "disable", [row]))[-1] == "Disabled 1 schedule(s)."
    rewind("welcome", 7200)
    assert recurrence.tick(DEFAULT_DB_ALIAS) == 0
    assert not Job.objects.exists()


def test_settings_entries_are_read_only_beside_the_admins(admin_client: Client, rows: list[Schedule]) -> None:
    here = defined_here(admin_client)
    listed = admin_client.get(SCHEDULES).content.decode()
    assert listed.count('<br><span class="quiet">settings</span>') == 2
    assert listed.count('<br><span class="quiet">admin</span>') == 1
    page = admin_client.get(f"{SCHEDULES}{rows[0].pk}/change/").content.decode()
    assert 'name="task"' not in page
    assert '<div class="readonly">settings</div>' in page
    assert admin_client.get(f"{SCHEDULES}{here.pk}/change/").content.decode().count('name="task"') == 1
    assert edit(admin_client, rows[0], kwargs='{"user_id": 2}').status_code == 403
    assert admin_client.post(f"{SCHEDULES}{rows[0].pk}/delete/", {"post": "yes"}).status_code == 403
    assert admin_client.post(f"{SCHEDULES}{here.pk}/delete/", {"post": "yes"}).status_code == 302
    assert Schedule.objects.count() == 2


def test_the_page_shows_next_ticks_in_its_zone_and_last_runs_with_outcomes(admin_client: Client) -> None:
    row = defined_here(admin_client, cron="0 3 * * *", every="")
    Schedule.objects.filter(pk=row.pk).update(
        next_tick_at=stored(datetime.datetime(2026, 10, 24, 1, tzinfo=datetime.timezone.utc))
    )
    for _ in range(2):
        recurrence.run_now(Schedule.objects.get(), DEFAULT_DB_ALIAS)
    first, second = Job.objects.order_by("pk")
    Job.objects.filter(pk=first.pk).update(status=JobStatus.FAILED)
    page = admin_client.get(f"{SCHEDULES}{row.pk}/change/").content.decode()
    # The night Paris's clocks go back: 03:00 CEST, then 03:00 CET.
    assert "2026-10-25 03:00:00 CET (Europe/Paris)<br>2026-10-26 03:00:00 CET (Europe/Paris)" in page
    runs = page[page.index('<ul class="sqlqueue-runs">') :]
    assert runs.index(f">#{second.pk}</a>") < runs.index(f">#{first.pk}</a>")  # newest first
    assert ">Failed</span>" in runs
    assert ">Ready</span>" in runs
    Job.objects.filter(pk=second.pk).delete()  # pruned
    assert f"#{second.pk}</a> pruned" in admin_client.get(f"{SCHEDULES}{row.pk}/change/").content.decode()
    listed = admin_client.get(SCHEDULES).content.decode()
    assert f">#{second.pk}</a> pruned</td>" in listed


def test_viewing_jobs_is_not_editing_schedules(django_user_model: Any, admin_client: Client) -> None:
    row = defined_here(admin_client)
    viewer = staff_client(django_user_model, "view_job")
    assert viewer.get(SCHEDULES).status_code == 403
    assert viewer.post(f"{SCHEDULES}add/", fields(key="other")).status_code == 403
    assert edit(viewer, row, kwargs='{"user_id": 2}').status_code == 403
    viewer.logout()
    reader = staff_client(django_user_model, "view_job", "view_schedule", username="reader")
    page = reader.get(f"{SCHEDULES}{row.pk}/change/").content.decode()
    assert 'name="task"' not in page  # read-only
    assert edit(reader, row, kwargs='{"user_id": 2}').status_code == 403
    assert reader.post(f"{SCHEDULES}add/", fields(key="other")).status_code == 403
    assert Schedule.objects.get().kwargs == {"user_id": 1}
    editor = staff_client(django_user_model, "view_schedule", "add_schedule", "change_schedule", username="editor")
    assert editor.post(f"{SCHEDULES}add/", fields(key="other")).status_code == 302
    assert edit(editor, row, kwargs='{"user_id": 2}').status_code == 302
    assert Schedule.objects.get(key="welcome").kwargs == {"user_id": 2}


def test_the_bulk_delete_refuses_a_selection_with_a_settings_entry(admin_client: Client, rows: list[Schedule]) -> None:
    here = defined_here(admin_client)
    mixed = [str(here.pk), str(rows[0].pk)]
    page = act(admin_client, "delete_selected", [here, rows[0]]).content.decode()
    assert "<title>Cannot delete schedules" in page
    admin_client.post(SCHEDULES, {"action": "delete_selected", "_selected_action": mixed, "post": "yes"})
    assert Schedule.objects.count() == 3
    admin_client.post(SCHEDULES, {"action": "delete_selected", "_selected_action": [str(here.pk)], "post": "yes"})
    assert sorted(Schedule.objects.values_list("key", flat=True)) == ["nightly", "ping"]
