"""The failures page (``admin/failures.py`` and its views in ``admin/jobs.py``): jobs whose
last attempt failed, grouped by task and exception class, and the group's retry and cancel."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client
from django.utils import timezone
from django.utils.html import strip_tags

from django_sqlqueue.admin import changes, failures
from django_sqlqueue.models import Job, JobStatus
from tests.support.admin_helpers import CHANGELIST, make_job, messages_of, staff_client

pytestmark = pytest.mark.django_db

PAGE = f"{CHANGELIST}failures/"
EVIL = "<script>alert(1)</script>"
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def failing(status: str, error_class: str, *, task: str = "tests.testapp.tasks.noop", **fields: Any) -> Job:
    """A job whose errors end with one raised ``error_class`` (after a ``RuntimeError``),
    by default after two attempts."""
    attempts = fields.pop("attempts", 2)
    job = make_job(status, errors=2, **fields)
    errors = job.errors
    errors[-1] |= {"exception_class_path": error_class, "message": f"{error_class} {job.pk}"}
    Job.objects.filter(pk=job.pk).update(errors=errors, last_error_class=error_class, task=task, attempts=attempts)
    job.refresh_from_db()
    return job


def by_key(found: list[failures.Group]) -> dict[tuple[str, str], failures.Group]:
    return {(group.task, group.error_class): group for group in found}


def test_jobs_whose_last_attempt_failed_are_grouped_by_task_and_class() -> None:
    for _ in range(3):
        failing(JobStatus.FAILED, "builtins.KeyError")
    failing(JobStatus.READY, "builtins.KeyError")
    failing(JobStatus.FAILED, "builtins.KeyError", task="tests.testapp.tasks.other")
    failing(JobStatus.FAILED, "app.errors.Timeout")
    make_job(JobStatus.FAILED, errors=1)  # RuntimeError
    # Not failed last: succeeded, cancelled, retried by a person (attempts from 0), never ran.
    failing(JobStatus.SUCCESSFUL, "builtins.KeyError")
    failing(JobStatus.CANCELLED, "builtins.KeyError")
    failing(JobStatus.READY, "builtins.KeyError", attempts=0)
    make_job()
    found, total = failures.groups()
    assert total == 4
    counts = {key: (group.failed, group.waiting) for key, group in by_key(found).items()}
    assert counts == {
        ("tests.testapp.tasks.noop", "builtins.KeyError"): (3, 1),
        ("tests.testapp.tasks.other", "builtins.KeyError"): (1, 0),
        ("tests.testapp.tasks.noop", "app.errors.Timeout"): (1, 0),
        ("tests.testapp.tasks.noop", "builtins.RuntimeError"): (1, 0),
    }


def test_first_and_last_seen_and_the_newest_jobs_error() -> None:
    hour = datetime.timedelta(hours=1)
    failing(JobStatus.FAILED, "builtins.KeyError", finished_at=T0 + hour)
    failing(JobStatus.FAILED, "builtins.KeyError", finished_at=T0)
    # Waiting for its retry: seen when the attempt that failed started.
    newest = failing(JobStatus.READY, "builtins.KeyError", started_at=T0 + 2 * hour)
    failing(JobStatus.FAILED, "app.errors.Timeout", finished_at=T0 + 3 * hour)
    found, _ = failures.groups()
    assert [group.error_class for group in found] == ["app.errors.Timeout", "builtins.KeyError"]
    group = found[1]
    assert (group.first_seen, group.last_seen) == (T0, T0 + 2 * hour)
    assert group.newest == newest.pk
    assert f"builtins.KeyError: builtins.KeyError {newest.pk}" in strip_tags(group.sample)
    assert "boom 1" not in group.sample  # only the last attempt's error


def test_a_failed_job_with_no_error_recorded_has_its_own_group() -> None:
    make_job(JobStatus.FAILED, finished_at=timezone.now())
    found, _ = failures.groups()
    assert [(group.error_class, group.failed) for group in found] == [("", 1)]


def test_the_page_shows_groups_escaped_with_their_buttons(admin_client: Client) -> None:
    failing(JobStatus.FAILED, EVIL, finished_at=T0)
    newest = failing(JobStatus.READY, EVIL, started_at=T0)
    page = admin_client.get(PAGE).content.decode()
    assert EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f'<a href="{CHANGELIST}{newest.pk}/change/">#{newest.pk}</a>' in page
    assert 'value="Retry 1 failed"' in page
    assert 'value="Cancel 1 retrying"' in page


def test_the_page_with_no_failures(admin_client: Client) -> None:
    make_job()
    response = admin_client.get(PAGE)
    assert response.status_code == 200
    assert "No job's last attempt failed." in response.content.decode()


def test_the_changelist_links_to_the_page(admin_client: Client) -> None:
    assert f'href="{PAGE}" id="failures"' in admin_client.get(CHANGELIST).content.decode()
    assert f'href="{PAGE}" id="failures"' in admin_client.get(f"{CHANGELIST}overview/").content.decode()


def test_retry_a_group_retries_all_its_failed_jobs(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "CHUNK_SIZE", 7)
    group = [failing(JobStatus.FAILED, "builtins.KeyError") for _ in range(60)]  # more than a page, many chunks
    waiting = failing(JobStatus.READY, "builtins.KeyError")
    other_class = failing(JobStatus.FAILED, "app.errors.Timeout")
    other_task = failing(JobStatus.FAILED, "builtins.KeyError", task="tests.testapp.tasks.other")
    data = {"task": "tests.testapp.tasks.noop", "error_class": "builtins.KeyError"}
    response = admin_client.post(f"{PAGE}retry/", data)
    assert response["Location"] == PAGE
    assert messages_of(admin_client.get(PAGE)) == ["Retried 60 jobs."]
    assert set(Job.objects.filter(pk__in=[job.pk for job in group]).values_list("status", "attempts")) == {
        (JobStatus.READY, 0)
    }
    assert Job.objects.get(pk=waiting.pk).attempts == 2
    assert Job.objects.get(pk=other_class.pk).status == JobStatus.FAILED
    assert Job.objects.get(pk=other_task.pk).status == JobStatus.FAILED
    assert LogEntry.objects.filter(change_message="Retried").count() == 60


def test_cancel_a_group_cancels_its_jobs_waiting_for_a_retry(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "CHUNK_SIZE", 7)
    group = [failing(JobStatus.READY, "builtins.KeyError") for _ in range(60)]
    failed = failing(JobStatus.FAILED, "builtins.KeyError")
    retried_by_hand = failing(JobStatus.READY, "builtins.KeyError", attempts=0)
    other_class = failing(JobStatus.READY, "app.errors.Timeout")
    data = {"task": "tests.testapp.tasks.noop", "error_class": "builtins.KeyError"}
    admin_client.post(f"{PAGE}cancel/", data)
    assert messages_of(admin_client.get(PAGE)) == ["Cancelled 60 jobs."]
    assert set(Job.objects.filter(pk__in=[job.pk for job in group]).values_list("status", flat=True)) == {
        JobStatus.CANCELLED
    }
    assert Job.objects.get(pk=failed.pk).status == JobStatus.FAILED
    assert Job.objects.get(pk=retried_by_hand.pk).status == JobStatus.READY
    assert Job.objects.get(pk=other_class.pk).status == JobStatus.READY


def test_the_group_of_jobs_with_no_error_recorded_can_be_retried(admin_client: Client) -> None:
    make_job(JobStatus.FAILED)
    failing(JobStatus.FAILED, "builtins.KeyError")
    admin_client.post(f"{PAGE}retry/", {"task": "tests.testapp.tasks.noop", "error_class": ""})
    assert sorted(Job.objects.values_list("status", flat=True)) == [JobStatus.FAILED, JobStatus.READY]


def test_the_page_needs_view_permission(django_user_model: Any) -> None:
    assert staff_client(django_user_model).get(PAGE).status_code == 403


def test_group_changes_need_their_permission(django_user_model: Any) -> None:
    failing(JobStatus.FAILED, "builtins.KeyError")
    failing(JobStatus.READY, "builtins.KeyError")
    client = staff_client(django_user_model, "view_job")
    page = client.get(PAGE).content.decode()
    assert "builtins.KeyError" in strip_tags(page)
    assert "retry-group" not in page
    assert "cancel-group" not in page
    data = {"task": "tests.testapp.tasks.noop", "error_class": "builtins.KeyError"}
    assert client.post(f"{PAGE}retry/", data).status_code == 403
    assert client.post(f"{PAGE}cancel/", data).status_code == 403
    assert client.post(f"{PAGE}delete/", data).status_code == 403
    assert sorted(Job.objects.values_list("status", flat=True)) == [JobStatus.FAILED, JobStatus.READY]


def test_group_changes_only_on_post(admin_client: Client) -> None:
    failing(JobStatus.FAILED, "builtins.KeyError")
    assert admin_client.get(f"{PAGE}retry/?task=tests.testapp.tasks.noop&error_class=x").status_code == 405
    assert admin_client.post(f"{PAGE}retry/", {"task": "tests.testapp.tasks.noop"}).status_code == 404
    assert Job.objects.get().status == JobStatus.FAILED
