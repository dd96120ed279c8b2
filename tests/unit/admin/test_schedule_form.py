"""The form that adds and edits a schedule in the admin (``admin/schedule_form.py``),
through the admin's pages: what it saves, and each input it refuses with the reason."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.test import Client, override_settings

from django_sqlqueue.db import recurrence
from django_sqlqueue.models import Job, Schedule
from django_sqlqueue.rules.recurrence import DefinedIn
from tests.unit.db.test_recurrence import rewind

pytestmark = pytest.mark.django_db

ADD = "/admin/django_sqlqueue/schedule/add/"
NOOP = "tests.testapp.tasks.noop"
WELCOME = "tests.testapp.tasks.send_welcome"


def fields(**changes: str) -> dict[str, str]:
    """A valid form's data (a welcome every hour: an hour passes during a test only once
    in thousands of runs, so a tick comes due only when a test says so), with ``changes``."""
    data = {
        "key": "welcome",
        "task": WELCOME,
        "cron": "",
        "every": "3600",
        "tz": "Europe/Paris",
        "missed": "latest",
        "args": "[]",
        "kwargs": '{"user_id": 1}',
        "queue": "",
        "priority": "",
        "enabled": "on",
    }
    data.update(changes)
    return {name: value for name, value in data.items() if not (name == "enabled" and value == "")}


def errors(response: Any) -> str:
    """The form's errors as the page lists them, or fails when it was saved."""
    assert response.status_code == 200, "the form was saved"
    return str(response.context["adminform"].form.errors)


def test_an_added_schedule_ticks_from_now_on_and_enqueues_its_job(admin_client: Client) -> None:
    response = admin_client.post(ADD, fields())
    assert response.status_code == 302
    row = Schedule.objects.get()
    assert (row.defined_in, row.expression, row.kwargs) == (DefinedIn.ADMIN, "every 3600 s", {"user_id": 1})
    assert row.enabled
    assert row.next_tick_at is not None
    assert recurrence.tick(DEFAULT_DB_ALIAS) == 0
    rewind("welcome", 3601)
    assert recurrence.tick(DEFAULT_DB_ALIAS) == 1
    job = Job.objects.get()
    assert (job.task, job.kwargs, job.queue) == (WELCOME, {"user_id": 1}, "mail")
    assert Schedule.objects.get().recent_jobs == [job.pk]


def test_a_cron_schedule_is_saved_with_its_expression(admin_client: Client) -> None:
    assert admin_client.post(ADD, fields(cron="0 3 * * *", every="")).status_code == 302
    row = Schedule.objects.get()
    assert (row.cron, row.every, row.expression) == ("0 3 * * *", None, "0 3 * * *")


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"cron": "0 3 * *", "every": ""}, "cron must be a five-field expression such as"),
        ({"cron": "0 25 * * *", "every": ""}, "cron &#x27;0 25 * * *&#x27; is not valid"),
        ({"every": "0.5"}, "every must be from 1 s to 365000 days"),
        ({"cron": "0 3 * * *"}, "Give exactly one of cron and every."),
        ({"every": ""}, "Give exactly one of cron and every."),
        ({"task": "no.such.task"}, "Select a valid choice. no.such.task is not one of the available choices."),
        ({"args": "[1,"}, "Enter a valid JSON."),
        ({"args": '{"a": 1}'}, "args must be a JSON list"),
        ({"kwargs": "[1]"}, "kwargs must be a JSON object"),
        (
            {"kwargs": '{"user": 1}'},
            "Every tick would be refused: its arguments do not fit send_welcome(user_id, *, greeting=",
        ),
        ({"kwargs": '{"user_id": NaN}'}, "refused: kwargs[&#x27;user_id&#x27;] is nan, which JSON cannot represent"),
        ({"tz": "Mars/Olympus"}, "&#x27;Mars/Olympus&#x27; is not a time zone name"),
        ({"queue": "mail", "priority": "1000"}, "Every tick would be refused: priority must be an integer from"),
        ({"key": ""}, "This field is required."),
    ],
)
def test_bad_input_is_refused_with_its_reason_and_nothing_saved(
    admin_client: Client, changes: dict[str, str], problem: str
) -> None:
    assert problem in errors(admin_client.post(ADD, fields(**changes)))
    assert not Schedule.objects.exists()


def test_a_name_taken_by_settings_or_another_schedule_is_refused(admin_client: Client) -> None:
    with override_settings(SQLQUEUE_SCHEDULE={"welcome": {"task": NOOP, "every": 60}}):
        problem = errors(admin_client.post(ADD, fields()))
    assert "SQLQUEUE_SCHEDULE has an entry named &#x27;welcome&#x27;: choose another name." in problem
    assert admin_client.post(ADD, fields()).status_code == 302
    assert "Schedule with this Key already exists." in errors(admin_client.post(ADD, fields()))
    assert Schedule.objects.count() == 1


def test_a_task_gone_from_the_code_is_shown_and_must_be_replaced(admin_client: Client) -> None:
    admin_client.post(ADD, fields())
    row = Schedule.objects.get()
    Schedule.objects.update(task="tests.testapp.tasks.removed")  # a deploy removed it
    page = admin_client.get(f"/admin/django_sqlqueue/schedule/{row.pk}/change/").content.decode()
    assert "tests.testapp.tasks.removed (not registered)" in page
    assert "No task is registered as &#x27;tests.testapp.tasks.removed&#x27;." in page  # its problem
    response = admin_client.post(
        f"/admin/django_sqlqueue/schedule/{row.pk}/change/", fields(task="tests.testapp.tasks.removed")
    )
    assert "is not a registered task: choose one of the list." in errors(response)
