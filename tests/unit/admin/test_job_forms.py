"""The job admin's Edit and Enqueue pages (``admin/job_forms.py``, with
``admin/edit_form.py`` and ``admin/enqueue_form.py``): their forms, their permissions,
the race with a worker's claim, and their admin log entries."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.test import Client
from django.utils import timezone

from django_sqlqueue.admin.edit_form import LOGGED_CHARS
from django_sqlqueue.admin.enqueue_form import EnqueueForm
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.registry import RegisteredTask, get_task
from tests.support.admin_helpers import CHANGELIST, make_job, messages_of, staff_client
from tests.testapp.tasks import add, noop, send_welcome, sync_order

pytestmark = pytest.mark.django_db

ENQUEUE = CHANGELIST + "enqueue/"


def name_of(task: Any) -> str:
    return get_task(task).name


def edit_url(job: Job) -> str:
    return f"{CHANGELIST}{job.pk}/edit/"


def edit_data(client: Client, job: Job, **changes: str) -> dict[str, Any]:
    """The Edit form as the page shows it for ``job``, with ``changes`` typed in."""
    form = client.get(edit_url(job)).context["form"]
    return {**{name: form[name].value() for name in form.fields}, **changes}


def posted(client: Client, url: str, data: dict[str, Any]) -> tuple[Any, list[str]]:
    """POST ``data``, following a redirect: the response and the messages shown."""
    response = client.post(url, data, follow=True)
    return response, messages_of(response)


def form_errors(response: Any) -> list[str]:
    form = response.context["form"]
    return [str(error) for errors in form.errors.values() for error in errors]


# Edit


def test_the_job_page_offers_edit_only_to_whom_may_and_for_jobs_no_worker_holds(
    admin_client: Client, django_user_model: Any
) -> None:
    ready, running = make_job(JobStatus.READY), make_job(JobStatus.RUNNING)
    assert f'href="{edit_url(ready)}"' in admin_client.get(f"{CHANGELIST}{ready.pk}/change/").content.decode()
    assert f'href="{edit_url(running)}"' not in admin_client.get(f"{CHANGELIST}{running.pk}/change/").content.decode()
    viewer = staff_client(django_user_model, "view_job")
    assert "/edit/" not in viewer.get(f"{CHANGELIST}{ready.pk}/change/").content.decode()


def test_an_edit_is_saved_logged_and_reported(admin_client: Client) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    run_at = timezone.localtime(timezone.now() + datetime.timedelta(hours=3)).replace(microsecond=0, tzinfo=None)
    data = edit_data(
        admin_client, job, args="[3, 4]", priority="5", queue="mail", run_at=run_at.isoformat(), max_attempts="6"
    )
    response, said = posted(admin_client, edit_url(job), data)
    assert response.redirect_chain == [(f"{CHANGELIST}{job.pk}/change/", 302)]
    edited = Job.objects.get(pk=job.pk)
    assert (edited.args, edited.priority, edited.queue, edited.max_attempts) == ([3, 4], 5, "mail", 6)
    assert edited.run_at == timezone.make_aware(run_at)
    entry = LogEntry.objects.get()
    assert (entry.action_flag, entry.object_id, entry.user.username) == (CHANGE, str(job.pk), "admin")
    assert entry.change_message.startswith(
        'Edited: args [1, 2] → [3, 4]; queue "default" → "mail"; priority 0 → 5; run_at '
    )
    assert entry.change_message.endswith("; max_attempts 3 → 6")
    assert said == [f"Job {job.pk}: {entry.change_message}."]


def test_the_log_cuts_long_arguments(admin_client: Client) -> None:
    job = Job.objects.enqueue(noop, ("x" * 500,))
    posted(admin_client, edit_url(job), edit_data(admin_client, job, args=json.dumps(["y" * 500])))
    message = LogEntry.objects.get().change_message
    old, new = message.removeprefix("Edited: args ").split(" → ")
    assert len(old) == len(new) == LOGGED_CHARS
    assert old.endswith("…")
    assert new.endswith("…")


def test_a_job_claimed_between_the_page_and_the_save_is_left_alone(admin_client: Client) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    data = edit_data(admin_client, job, args="[7, 7]")
    [claimed] = Job.objects.claim(worker_id="w1")
    assert claimed.pk == job.pk
    response, said = posted(admin_client, edit_url(job), data)
    assert response.redirect_chain == [(f"{CHANGELIST}{job.pk}/change/", 302)]
    assert said == [
        f"Job {job.pk} changed since the page was shown (it is now running): nothing was edited. "
        "Look at it again before editing it."
    ]
    assert Job.objects.values_list("status", "args").get(pk=job.pk) == (JobStatus.RUNNING, [1, 2])
    assert not LogEntry.objects.exists()


def test_a_job_retried_since_the_page_is_left_alone(admin_client: Client) -> None:
    """Back to the status the page showed, but not at its attempt count."""
    job = make_job(JobStatus.READY, errors=1)
    data = edit_data(admin_client, job, args="[7, 7]")
    Job.objects.filter(pk=job.pk).update(attempts=2)
    _, said = posted(admin_client, edit_url(job), data)
    assert said[0].startswith(f"Job {job.pk} changed since the page was shown (it is now ready)")
    assert Job.objects.get(pk=job.pk).args == []


def test_a_failed_job_is_edited_and_stays_failed_for_a_retry(admin_client: Client) -> None:
    job = make_job(JobStatus.FAILED, errors=3, args=[1, 2])
    posted(admin_client, edit_url(job), edit_data(admin_client, job, args="[1, 3]"))
    assert Job.objects.values_list("status", "attempts", "args").get(pk=job.pk) == (JobStatus.FAILED, 3, [1, 3])


def test_a_crafted_status_the_edit_does_not_apply_to_edits_nothing(admin_client: Client) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    _, said = posted(admin_client, edit_url(job), edit_data(admin_client, job, args="[7, 7]", status="RUNNING"))
    assert said[0].startswith(f"Job {job.pk} changed since the page was shown (it is now ready)")
    assert Job.objects.get(pk=job.pk).args == [1, 2]


def test_a_running_job_s_edit_page_sends_back_to_its_page(admin_client: Client) -> None:
    job = make_job(JobStatus.RUNNING)
    response = admin_client.get(edit_url(job), follow=True)
    said = messages_of(response)
    assert response.redirect_chain == [(f"{CHANGELIST}{job.pk}/change/", 302)]
    assert said == [f"Job {job.pk} is running: it cannot be edited."]


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"args": "[1,"}, "This is not JSON: Expecting value: line 1 column 4 (char 3)."),
        ({"args": '{"a": 1}'}, 'args must be a JSON list, such as [1, "two"].'),
        ({"kwargs": "[]"}, 'kwargs must be a JSON object, such as {"user_id": 1}.'),
        ({"args": ""}, "This field is required."),
        ({"priority": "lots"}, "Enter a whole number."),
        ({"max_attempts": "0"}, "Ensure this value is greater than or equal to 1."),
    ],
)
def test_input_the_form_cannot_read_is_refused_with_its_error(
    admin_client: Client, changes: dict[str, str], error: str
) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    response = admin_client.post(edit_url(job), edit_data(admin_client, job, **changes))
    assert response.status_code == 200
    assert form_errors(response) == [error]
    assert error in response.content.decode().replace("&quot;", '"')
    assert Job.objects.get(pk=job.pk).args == [1, 2]


def test_arguments_that_do_not_bind_are_refused_as_at_enqueue(admin_client: Client) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    response = admin_client.post(edit_url(job), edit_data(admin_client, job, kwargs='{"c": 3}'))
    assert response.status_code == 200
    assert form_errors(response) == [
        f"Cannot edit job {job.pk}: its arguments do not fit add(a, b): got an unexpected keyword argument 'c'."
    ]
    assert Job.objects.get(pk=job.pk).kwargs == {}
    assert not LogEntry.objects.exists()


def test_an_edit_to_a_unique_key_another_job_holds_is_refused(admin_client: Client) -> None:
    Job.objects.enqueue(sync_order, (2,))
    job = Job.objects.enqueue(sync_order, (1,))
    response = admin_client.post(edit_url(job), edit_data(admin_client, job, args="[2]"))
    assert form_errors(response) == [
        f"Cannot edit job {job.pk}: another job holds the unique key "
        f"{Job.objects.build(sync_order, (2,)).unique_key!r} its new arguments make."
    ]


# Enqueue


def test_the_list_links_to_enqueue_only_for_whom_may(admin_client: Client, django_user_model: Any) -> None:
    assert f'href="{ENQUEUE}" id="enqueue-job"' in admin_client.get(CHANGELIST).content.decode()
    assert ENQUEUE not in staff_client(django_user_model, "view_job").get(CHANGELIST).content.decode()


def test_the_first_step_offers_the_registered_tasks(admin_client: Client) -> None:
    choices = dict(admin_client.get(ENQUEUE).context["form"].fields["task"].choices)
    assert {"tests.testapp.tasks.add", "testapp.fail"} <= choices.keys()


def test_a_task_s_form_has_a_field_per_parameter_with_its_default(admin_client: Client) -> None:
    form = admin_client.get(ENQUEUE, {"task": "tests.testapp.tasks.send_welcome"}).context["form"]
    assert list(form.fields)[:2] == ["arg_user_id", "arg_greeting"]
    assert form.fields["arg_user_id"].required
    greeting = form.fields["arg_greeting"]
    assert not greeting.required
    assert greeting.help_text == 'Empty: its default, "Hello".'
    assert greeting.widget.attrs["placeholder"] == '"Hello"'


def test_a_job_is_enqueued_as_code_enqueues_it_and_logged(admin_client: Client) -> None:
    data = {"task": "tests.testapp.tasks.send_welcome", "arg_user_id": "42", "arg_greeting": '"Hi"', "priority": "0"}
    response, said = posted(admin_client, ENQUEUE, data)
    job = Job.objects.get()
    assert response.redirect_chain == [(f"{CHANGELIST}{job.pk}/change/", 302)]
    # The task's own options where none was given (send_welcome: queue "mail", most attempts 7).
    assert (job.task, job.args, job.kwargs) == (name_of(send_welcome), [], {"user_id": 42, "greeting": "Hi"})
    assert (job.queue, job.priority, job.max_attempts) == ("mail", 0, 7)
    assert said == [f"Enqueued job {job.pk} of {name_of(send_welcome)}."]
    entry = LogEntry.objects.get()
    assert (entry.action_flag, entry.object_id, entry.change_message) == (
        ADDITION,
        str(job.pk),
        "Enqueued from the admin on queue mail",
    )


def test_an_empty_parameter_takes_its_default(admin_client: Client) -> None:
    posted(admin_client, ENQUEUE, {"task": "tests.testapp.tasks.send_welcome", "arg_user_id": "1"})
    assert Job.objects.get().kwargs == {"user_id": 1}


def test_star_arguments_go_by_position(admin_client: Client) -> None:
    data = {"task": name_of(noop), "arg_args": '[1, "two"]', "arg_kwargs": '{"three": 3}'}
    posted(admin_client, ENQUEUE, data)
    assert Job.objects.values_list("args", "kwargs").get() == ([1, "two"], {"three": 3})


def spread(a: int, /, b: int = 1, *rest: int, flag: bool = False, **extra: int) -> None:
    """Every kind of parameter, for the form's call."""


@pytest.mark.parametrize(
    ("data", "call"),
    [
        ({"arg_a": "1"}, ([1], {})),
        ({"arg_a": "1", "arg_b": "2", "arg_flag": "true"}, ([1], {"b": 2, "flag": True})),
        ({"arg_a": "1", "arg_b": "2", "arg_rest": "[3, 4]"}, ([1, 2, 3, 4], {})),
        ({"arg_a": "1", "arg_extra": '{"z": 9}', "arg_flag": "null"}, ([1], {"flag": None, "z": 9})),
    ],
)
def test_the_form_calls_each_kind_of_parameter_as_python_would(
    data: dict[str, str], call: tuple[list[Any], dict[str, Any]]
) -> None:
    form = EnqueueForm(RegisteredTask(name="spread", func=spread), data)
    assert form.is_valid(), form.errors
    assert (form.cleaned_data["args"], form.cleaned_data["kwargs"]) == call


def test_an_argument_by_position_after_one_left_empty_is_refused() -> None:
    form = EnqueueForm(RegisteredTask(name="spread", func=spread), {"arg_a": "1", "arg_rest": "[3]"})
    assert not form.is_valid()
    assert form.non_field_errors() == ["rest comes by position after b, which was left empty: give b too."]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"arg_user_id": "{"}, "This is not JSON: Expecting property name enclosed in double quotes"),
        ({}, "This field is required."),
        ({"arg_user_id": "1", "priority": "999999"}, "Ensure this value is less than or equal to"),
    ],
)
def test_input_the_enqueue_form_cannot_read_is_refused(admin_client: Client, data: dict[str, str], error: str) -> None:
    response = admin_client.post(ENQUEUE, {"task": name_of(send_welcome), **data})
    assert response.status_code == 200
    assert any(message.startswith(error) for message in form_errors(response)), form_errors(response)
    assert not Job.objects.exists()


def test_arguments_an_enqueue_refuses_are_refused_with_its_words(admin_client: Client) -> None:
    response = admin_client.post(ENQUEUE, {"task": name_of(noop), "arg_args": '[{"1": NaN}]'})
    problem = "args[0]['1'] is nan, which JSON cannot represent"
    assert form_errors(response) == [f"Cannot enqueue {name_of(noop)}: {problem}."]
    assert not Job.objects.exists()


def test_an_unregistered_task_posted_is_refused(admin_client: Client) -> None:
    response = admin_client.post(ENQUEUE, {"task": "os.system", "arg_command": '"rm -rf /"'})
    assert response.status_code == 200
    assert form_errors(response) == ["Select a valid choice. os.system is not one of the available choices."]
    assert not Job.objects.exists()
    assert not LogEntry.objects.exists()


def test_a_call_whose_unique_key_a_job_holds_opens_that_job(admin_client: Client) -> None:
    holder = Job.objects.enqueue(sync_order, (5,))
    response, said = posted(admin_client, ENQUEUE, {"task": name_of(sync_order), "arg_order_id": "5"})
    assert response.redirect_chain == [(f"{CHANGELIST}{holder.pk}/change/", 302)]
    assert said == [
        f"Nothing enqueued: job {holder.pk} already holds the unique key ({holder.unique_key}) of this call."
    ]
    assert Job.objects.count() == 1


# Permissions: each page its own, refused with 403 on GET and crafted POSTs alike.


def test_a_view_only_user_is_refused_both_pages(django_user_model: Any) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    viewer = staff_client(django_user_model, "view_job")
    assert viewer.get(edit_url(job)).status_code == 403
    assert viewer.post(edit_url(job), {"args": "[5, 5]", "kwargs": "{}", "status": "READY"}).status_code == 403
    assert viewer.get(ENQUEUE).status_code == 403
    assert viewer.get(ENQUEUE, {"task": name_of(add)}).status_code == 403
    assert viewer.post(ENQUEUE, {"task": name_of(add), "arg_a": "1", "arg_b": "2"}).status_code == 403
    assert Job.objects.values_list("pk", "args").get() == (job.pk, [1, 2])


def test_each_permission_opens_its_page_only(django_user_model: Any) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    editor = staff_client(django_user_model, "view_job", "edit_job", username="editor")
    enqueuer = staff_client(django_user_model, "view_job", "enqueue_job", username="enqueuer")
    assert editor.get(edit_url(job)).status_code == 200
    assert editor.get(ENQUEUE).status_code == 403
    assert editor.post(ENQUEUE, {"task": name_of(add), "arg_a": "1", "arg_b": "2"}).status_code == 403
    assert enqueuer.get(ENQUEUE).status_code == 200
    assert enqueuer.get(edit_url(job)).status_code == 403
    assert enqueuer.post(edit_url(job), edit_data(editor, job, args="[5, 5]")).status_code == 403
    assert Job.objects.count() == 1
    assert Job.objects.get(pk=job.pk).args == [1, 2]
