"""The admin's changelist actions (``admin/changes.py``): retry, cancel, run now and
delete, their permissions, their messages and their admin log entries."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from django_sqlqueue.admin import changes
from django_sqlqueue.db import dependencies, dependents
from django_sqlqueue.models import Job, JobDependency, JobStatus
from django_sqlqueue.testing import run_jobs
from tests.support.admin_helpers import CHANGELIST, action, make_job, staff_client
from tests.support.severed import needs_a_server, sever
from tests.testapp.models import Receipt
from tests.testapp.tasks import fail, noop, record

pytestmark = pytest.mark.django_db

LATER = datetime.timedelta(hours=1)


def statuses() -> dict[int, str]:
    return dict(Job.objects.values_list("pk", "status"))


def messages(client: Client, response: Any) -> list[str]:
    assert response.status_code == 302, response.content[:500]
    return [str(message) for message in client.get(response["Location"]).context["messages"]]


# Retry


def test_retry_gives_failed_and_cancelled_jobs_a_fresh_start(admin_client: Client) -> None:
    failed = make_job(
        JobStatus.FAILED, errors=3, worker="w1", finished_at=timezone.now(), run_at=timezone.now() + LATER
    )
    cancelled = make_job(JobStatus.CANCELLED, finished_at=timezone.now())
    successful = make_job(JobStatus.SUCCESSFUL)
    response = action(admin_client, "retry", [failed, cancelled, successful])
    assert messages(admin_client, response) == ["Retried 2 jobs. Skipped 1 job: not failed or cancelled."]
    failed.refresh_from_db()
    assert (failed.status, failed.attempts, failed.worker, failed.started_at, failed.finished_at) == (
        JobStatus.READY,
        0,
        "",
        None,
        None,
    )
    assert [error["message"] for error in failed.errors] == ["boom 1", "boom 2", "boom 3"]
    assert failed.run_at <= timezone.now()
    assert statuses()[cancelled.pk] == JobStatus.READY
    assert statuses()[successful.pk] == JobStatus.SUCCESSFUL
    # A worker can run it now.
    assert [job.pk for job in Job.objects.claim(worker_id="w2")] == [failed.pk, cancelled.pk]


def _failed_workflow() -> tuple[Job, Job, Job, Job]:
    """A parent that failed for good, its child and grandchild cancelled by it, and a
    clean-up step (``after_failure="run"``) that ran."""
    parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    child = Job.objects.enqueue(record, ("child",), after=[parent])
    grandchild = Job.objects.enqueue(record, ("grandchild",), after=[child])
    cleanup = Job.objects.enqueue(record, ("cleanup",), after=[parent], after_failure="run")
    run_jobs()
    assert [statuses()[job.pk] for job in (parent, child, grandchild, cleanup)] == [
        JobStatus.FAILED,
        JobStatus.CANCELLED,
        JobStatus.CANCELLED,
        JobStatus.SUCCESSFUL,
    ]
    return parent, child, grandchild, cleanup


def test_retry_says_it_leaves_the_jobs_the_failure_cancelled(admin_client: Client) -> None:
    parent, child, grandchild, _ = _failed_workflow()
    response = action(admin_client, "retry", [parent])
    assert messages(admin_client, response) == [
        "Retried 1 job. 2 jobs their ends had cancelled stay cancelled:"
        " “Retry with cancelled dependents” retries those too."
    ]
    assert (statuses()[child.pk], statuses()[grandchild.pk]) == (JobStatus.CANCELLED, JobStatus.CANCELLED)


def test_retry_with_dependents_makes_them_wait_again_and_run_after_it(admin_client: Client) -> None:
    parent, child, grandchild, cleanup = _failed_workflow()
    response = action(admin_client, "retry_with_dependents", [parent])
    assert messages(admin_client, response) == ["Retried 1 job. 2 jobs their ends had cancelled wait for them again."]
    rows = dict(Job.objects.values_list("pk", "status"))
    assert [rows[job.pk] for job in (parent, child, grandchild, cleanup)] == [
        JobStatus.READY,
        JobStatus.WAITING,
        JobStatus.WAITING,
        JobStatus.SUCCESSFUL,  # it ran, and stays as it is
    ]
    assert Job.objects.get(pk=child.pk).finished_at is None
    Job.objects.filter(pk=parent.pk).update(task="tests.testapp.tasks.record", args=["parent"])  # fixed
    run_jobs()
    assert Receipt.objects.filter(token__in=["parent", "child", "grandchild"], runs=1).count() == 3
    assert Receipt.objects.get(token="cleanup").runs == 1
    assert set(statuses().values()) == {JobStatus.SUCCESSFUL}


def test_retry_with_dependents_leaves_a_job_another_failure_stops(admin_client: Client) -> None:
    parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    other = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    both = Job.objects.enqueue(record, ("both",), after=[parent, other])
    below = Job.objects.enqueue(record, ("below",), after=[both])
    alone = Job.objects.enqueue(record, ("alone",), after=[parent])
    run_jobs()
    response = action(admin_client, "retry_with_dependents", [parent])
    assert messages(admin_client, response) == ["Retried 1 job. 1 job their ends had cancelled wait for them again."]
    rows = statuses()
    assert (rows[both.pk], rows[below.pk], rows[alone.pk]) == (
        JobStatus.CANCELLED,
        JobStatus.CANCELLED,
        JobStatus.WAITING,
    )
    # Retrying both failed jobs at once brings back what they stopped together.
    Job.objects.filter(pk=parent.pk).update(status=JobStatus.FAILED)
    response = action(admin_client, "retry_with_dependents", [parent, other])
    assert messages(admin_client, response) == ["Retried 2 jobs. 2 jobs their ends had cancelled wait for them again."]
    assert Job.objects.values_list("status", "waiting_for").get(pk=both.pk) == (JobStatus.WAITING, 2)


def test_retry_with_dependents_brings_back_a_job_whose_other_parent_succeeded_and_is_gone(
    admin_client: Client, settings: Any
) -> None:
    settings.SQLQUEUE_RETENTION = {"SUCCESSFUL": 0}
    done = Job.objects.enqueue(record, ("done",), priority=1)
    parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    both = Job.objects.enqueue(record, ("both",), after=[done, parent])
    run_jobs()
    assert statuses() == {parent.pk: JobStatus.FAILED, both.pk: JobStatus.CANCELLED}  # done: deleted on success
    response = action(admin_client, "retry_with_dependents", [parent])
    assert messages(admin_client, response) == ["Retried 1 job. 1 job their ends had cancelled wait for them again."]
    assert Job.objects.values_list("status", "waiting_for").get(pk=both.pk) == (JobStatus.WAITING, 1)
    Job.objects.filter(pk=parent.pk).update(task="tests.testapp.tasks.record", args=["parent"])  # fixed
    run_jobs()
    assert Receipt.objects.get(token="both").runs == 1


def test_retry_with_dependents_still_leaves_a_job_whose_deleted_parent_stopped_it(admin_client: Client) -> None:
    gone = Job.objects.enqueue(record, ("gone",))
    parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    both = Job.objects.enqueue(record, ("both",), after=[gone, parent])
    Job.objects.filter(pk=gone.pk).delete()  # unfinished: its link stays unsettled
    dependencies.sweep(Job, "default")  # the maintenance leader: cancelled, "which it waits for, was deleted"
    run_jobs()
    response = action(admin_client, "retry_with_dependents", [parent])
    assert messages(admin_client, response) == ["Retried 1 job."]
    assert statuses()[both.pk] == JobStatus.CANCELLED


def test_retry_with_dependents_leaves_each_dependent_whose_key_is_held_and_brings_back_the_rest(
    admin_client: Client,
) -> None:
    parent = Job.objects.enqueue(fail, ("boom",), max_attempts=1)
    keyed = Job.objects.enqueue(record, ("keyed",), after=[parent], unique_key="report-1")
    below = Job.objects.enqueue(record, ("below",), after=[keyed])
    other = Job.objects.enqueue(record, ("other",), after=[parent])
    run_jobs()
    holder = Job.objects.enqueue(record, ("holder",), unique_key="report-1")
    response = action(admin_client, "retry_with_dependents", [parent])
    assert messages(admin_client, response) == [
        "Retried 1 job. Left 1 job as they were: another ready or running job holds their unique key"
        f" (job {keyed.pk}: its unique key is held by job {holder.pk}). 1 job waiting on those stay cancelled"
        " with them. 1 job their ends had cancelled wait for them again."
    ]
    rows = statuses()
    assert [rows[job.pk] for job in (parent, keyed, below, other, holder)] == [
        JobStatus.READY,
        JobStatus.CANCELLED,
        JobStatus.CANCELLED,  # only the job left cancelled stops it
        JobStatus.WAITING,
        JobStatus.READY,
    ]
    assert set(JobDependency.objects.filter(settled=False).values_list("child_id", flat=True)) == {other.pk}


@needs_a_server
@pytest.mark.django_db(transaction=True)
def test_retry_with_dependents_whose_connection_drops_midway_writes_nothing_says_so_and_can_be_tried_again(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent, child, grandchild, _ = _failed_workflow()
    found = dependents.cancelled_dependents

    def severed_after(*args: Any, **kwargs: Any) -> set[int]:
        below = found(*args, **kwargs)
        sever()  # the parent is retried and logged, its dependents found, not yet brought back
        return below

    monkeypatch.setattr(dependents, "cancelled_dependents", severed_after)
    response = action(admin_client, "retry_with_dependents", [parent])
    (said,) = messages(admin_client, response)
    assert said.startswith("Retry with cancelled dependents stopped: the database failed (")
    assert said.endswith(
        "The jobs it was changing then were left as they were: select them and try again. Before that: Retried 0 jobs."
    )
    rows = statuses()
    assert [rows[job.pk] for job in (parent, child, grandchild)] == [
        JobStatus.FAILED,
        JobStatus.CANCELLED,
        JobStatus.CANCELLED,
    ]
    assert not JobDependency.objects.filter(settled=False).exists()
    assert not LogEntry.objects.exists()
    monkeypatch.setattr(dependents, "cancelled_dependents", found)
    response = action(admin_client, "retry_with_dependents", [parent])
    assert messages(admin_client, response) == ["Retried 1 job. 2 jobs their ends had cancelled wait for them again."]
    assert (statuses()[child.pk], statuses()[grandchild.pk]) == (JobStatus.WAITING, JobStatus.WAITING)
    assert LogEntry.objects.count() == 1


def test_retry_of_a_job_cancelled_while_it_waited_makes_it_wait_again(admin_client: Client) -> None:
    parent = Job.objects.enqueue(record, ("parent",))
    child = Job.objects.enqueue(record, ("child",), after=[parent])
    Job.objects.cancel([child.pk])
    response = action(admin_client, "retry", [child])
    assert messages(admin_client, response) == ["Retried 1 job."]
    assert Job.objects.values_list("status", "waiting_for").get(pk=child.pk) == (JobStatus.WAITING, 1)
    response = action(admin_client, "run_now", [child])  # not before its parent either
    assert messages(admin_client, response)[-1:] == ["Brought forward 0 jobs. Skipped 1 job: not ready or already due."]
    assert [job.pk for job in Job.objects.claim(worker_id="w")] == [parent.pk]
    Job.objects.filter(pk=parent.pk).update(status=JobStatus.READY, worker="", attempts=0)  # given back
    run_jobs()
    first, second = Receipt.objects.order_by("pk").values_list("token", flat=True)
    assert (first, second) == ("parent", "child")


def test_retry_of_a_cancelled_dependent_whose_parent_was_retried_waits_for_that_parent(admin_client: Client) -> None:
    parent, child, _, _ = _failed_workflow()
    action(admin_client, "retry", [parent])
    response = action(admin_client, "retry", [child])
    assert messages(admin_client, response)[-1:] == [
        "Retried 1 job. 1 job their ends had cancelled stay cancelled:"
        " “Retry with cancelled dependents” retries those too."
    ]
    assert Job.objects.values_list("status", "waiting_for").get(pk=child.pk) == (JobStatus.WAITING, 1)
    assert [job.pk for job in Job.objects.claim(worker_id="w")] == [parent.pk]
    Job.objects.filter(pk=parent.pk).update(status=JobStatus.READY, worker="", attempts=0)  # given back
    Job.objects.filter(pk=parent.pk).update(task="tests.testapp.tasks.record", args=["parent"])  # fixed
    run_jobs()
    assert list(Receipt.objects.order_by("pk").values_list("token", flat=True)) == ["cleanup", "parent", "child"]
    assert statuses()[child.pk] == JobStatus.SUCCESSFUL


def test_retry_runs_an_expired_job_after_all(admin_client: Client) -> None:
    from django_sqlqueue.db import expiry
    from tests.testapp.tasks import expiring

    made = Job.objects.enqueue(expiring, ["late"])
    Job.objects.filter(pk=made.pk).update(expires_at=timezone.now() - datetime.timedelta(minutes=1))
    assert expiry.expire(Job.objects.all()) == 1
    action(admin_client, "retry", [made])
    retried = Job.objects.get(pk=made.pk)
    assert (retried.status, retried.expires_at, retried.end_reason) == (JobStatus.READY, None, "")
    assert [job.pk for job in Job.objects.claim(worker_id="w")] == [made.pk]


def test_retry_leaves_a_job_whose_unique_key_is_held_again(admin_client: Client) -> None:
    """No IntegrityError page: the job stays failed, and the message says why."""
    failed = make_job(JobStatus.FAILED, unique_key="order-42")
    twin = make_job(JobStatus.CANCELLED, unique_key="order-7")
    other = make_job(JobStatus.FAILED, unique_key="order-7")
    keyless = make_job(JobStatus.FAILED)
    holder = Job.objects.enqueue("tests.testapp.tasks.noop", unique_key="order-42")
    response = action(admin_client, "retry", [failed, twin, other, keyless, holder])
    assert messages(admin_client, response) == [
        "Retried 2 jobs. Skipped 1 job: not failed or cancelled. Left 2 jobs as they were: another ready or "
        f"running job holds their unique key (job {failed.pk}: its unique key is held by job {holder.pk};"
        f" job {other.pk}: its unique key is held by job {twin.pk})."
    ]
    assert statuses() == {
        failed.pk: JobStatus.FAILED,
        twin.pk: JobStatus.READY,  # the first of two jobs with one key
        other.pk: JobStatus.FAILED,
        keyless.pk: JobStatus.READY,
        holder.pk: JobStatus.READY,
    }
    assert LogEntry.objects.filter(change_message="Retried").count() == 2


def test_retry_of_a_failed_job_that_keeps_its_key_until_pruned(admin_client: Client) -> None:
    """It holds its own key: retrying it is no conflict, and the key stays held by it."""
    failed = make_job(JobStatus.FAILED, unique_key="order-42", unique_until_pruned=True)
    response = action(admin_client, "retry", [failed])
    assert messages(admin_client, response) == ["Retried 1 job."]
    assert statuses() == {failed.pk: JobStatus.READY}
    assert Job.objects.enqueue("tests.testapp.tasks.noop", unique_key="order-42").pk == failed.pk


def test_attempts_after_a_retry_are_numbered_after_the_earlier_ones(admin_client: Client) -> None:
    """A retried job's next failure is its fourth attempt, not a second "Attempt 1"."""
    failed = make_job(JobStatus.FAILED, errors=3, finished_at=timezone.now())
    action(admin_client, "retry", [failed])
    (job,) = Job.objects.claim(worker_id="w2")
    Job.objects.finish(worker_id="w2", failed={job: RuntimeError("boom 4")})
    job.refresh_from_db()
    assert [(error["attempt"], error["worker"], error["message"]) for error in job.errors] == [
        (1, "w1", "boom 1"),
        (2, "w1", "boom 2"),
        (3, "w1", "boom 3"),
        (4, "w2", "boom 4"),
    ]


def test_each_changed_job_is_in_the_admin_log(admin_client: Client, admin_user: Any) -> None:
    jobs = [make_job(JobStatus.FAILED) for _ in range(3)]
    action(admin_client, "retry", [*jobs, make_job(JobStatus.RUNNING)])
    entries = LogEntry.objects.order_by("object_id")
    assert [(entry.object_id, entry.action_flag, entry.change_message) for entry in entries] == [
        (str(job.pk), CHANGE, "Retried") for job in jobs
    ]
    assert {entry.user_id for entry in entries} == {admin_user.pk}


def test_past_the_cap_one_entry_sums_up_the_rest(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "LOGGED_JOBS", 2)
    jobs = [make_job(JobStatus.FAILED) for _ in range(5)]
    action(admin_client, "retry", jobs)
    entries = list(LogEntry.objects.order_by("pk").values_list("object_id", "object_repr", "change_message"))
    # Each entry names the job as it was when the change was made.
    assert entries[:2] == [(str(job.pk), f"#{job.pk} tests.testapp.tasks.noop [FAILED]", "Retried") for job in jobs[:2]]
    assert entries[2:] == [(None, f"3 more jobs, #{jobs[2].pk} to #{jobs[4].pk}", "Retried 3 more jobs")]


def test_changes_go_chunk_by_chunk(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "CHUNK_SIZE", 2)
    jobs = [make_job(JobStatus.FAILED) for _ in range(5)] + [make_job(JobStatus.READY)]
    response = action(admin_client, "retry", jobs)
    assert messages(admin_client, response) == ["Retried 5 jobs. Skipped 1 job: not failed or cancelled."]
    assert set(statuses().values()) == {JobStatus.READY}


# Cancel, run now


def test_cancel_cancels_ready_jobs_and_asks_running_ones_to_stop(admin_client: Client) -> None:
    ready = make_job(JobStatus.READY)
    running = make_job(JobStatus.RUNNING, worker="w1")
    finished = make_job(JobStatus.SUCCESSFUL)
    response = action(admin_client, "cancel", [ready, running, finished])
    assert messages(admin_client, response) == [
        "Cancelled 1 job. Asked 1 running job to stop. Skipped 1 job: not ready or running, or already asked to stop."
    ]
    ready.refresh_from_db()
    assert ready.status == JobStatus.CANCELLED
    assert ready.finished_at is not None
    running.refresh_from_db()
    assert (running.status, running.cancel_requested_at is not None) == (JobStatus.RUNNING, True)
    response = action(admin_client, "cancel", [running])
    assert messages(admin_client, response) == [
        "Cancelled 0 jobs. Skipped 1 job: not ready or running, or already asked to stop."
    ]


def test_run_now_brings_a_scheduled_job_forward(admin_client: Client) -> None:
    scheduled = make_job(run_at=timezone.now() + LATER)
    due = make_job()
    response = action(admin_client, "run_now", [scheduled, due])
    assert messages(admin_client, response) == ["Brought forward 1 job. Skipped 1 job: not ready or already due."]
    assert {job.pk for job in Job.objects.claim(worker_id="w")} == {scheduled.pk, due.pk}
    entries = LogEntry.objects.values_list("object_id", "action_flag", "change_message", "user__username")
    assert list(entries) == [(str(scheduled.pk), CHANGE, "Brought forward", "admin")]


def test_nothing_to_do_is_a_warning(admin_client: Client) -> None:
    response = action(admin_client, "cancel", [make_job(JobStatus.SUCCESSFUL)])
    follow = admin_client.get(response["Location"])
    [message] = follow.context["messages"]
    assert (message.level_tag, str(message)) == (
        "warning",
        "Cancelled 0 jobs. Skipped 1 job: not ready or running, or already asked to stop.",
    )


# Delete


def test_delete_asks_first_then_skips_running_jobs(admin_client: Client) -> None:
    failed = make_job(JobStatus.FAILED)
    running = make_job(JobStatus.RUNNING, worker="w1")
    page = action(admin_client, "delete_selected", [failed, running])
    assert page.status_code == 200
    assert "Delete 2 jobs? 1 of them is running and will be skipped." in page.content.decode()
    assert Job.objects.count() == 2
    response = action(admin_client, "delete_selected", [failed, running], post="yes")
    assert messages(admin_client, response) == ["Deleted 1 job. Skipped 1 job: running."]
    assert list(statuses()) == [running.pk]
    assert list(LogEntry.objects.values_list("object_id", "action_flag")) == [(str(failed.pk), DELETION)]


def test_deleting_a_waiting_job_deletes_the_links_that_made_it_wait(admin_client: Client) -> None:
    parent = Job.objects.enqueue(noop)
    by_action, by_page = Job.objects.enqueue(noop, after=[parent]), Job.objects.enqueue(noop, after=[parent])
    action(admin_client, "delete_selected", [by_action], post="yes")
    assert list(JobDependency.objects.values_list("child_id", flat=True)) == [by_page.pk]
    assert admin_client.post(f"{CHANGELIST}{by_page.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not JobDependency.objects.exists()
    assert list(statuses()) == [parent.pk]


def test_select_across_changes_the_whole_filtered_set(admin_client: Client) -> None:
    jobs = [make_job(JobStatus.FAILED, queue="mail") for _ in range(3)]
    other = make_job(JobStatus.FAILED)
    response = action(admin_client, "retry", jobs[:1], query="?queue=mail", select_across="1")
    assert messages(admin_client, response) == ["Retried 3 jobs."]
    assert statuses() == {**{job.pk: JobStatus.READY for job in jobs}, other.pk: JobStatus.FAILED}


# Permissions


@pytest.mark.parametrize(
    ("name", "codename", "status"),
    [
        ("retry", "retry_job", JobStatus.FAILED),
        ("retry_with_dependents", "retry_job", JobStatus.FAILED),
        ("cancel", "cancel_job", JobStatus.READY),
        ("run_now", "run_job_now", JobStatus.READY),
        ("delete_selected", "delete_job", JobStatus.FAILED),
    ],
)
def test_each_action_needs_its_own_permission(django_user_model: Any, name: str, codename: str, status: str) -> None:
    job = make_job(status, run_at=timezone.now() + LATER)
    others = [perm for perm in ("retry_job", "cancel_job", "run_job_now", "delete_job") if perm != codename]
    client = staff_client(django_user_model, "view_job", *others)
    assert action(client, name, [job], post="yes").status_code == 403
    assert Job.objects.filter(pk=job.pk, status=status).exists()
    assert not LogEntry.objects.exists()
    django_user_model.objects.get(username="staff").user_permissions.add(Permission.objects.get(codename=codename))
    assert action(client, name, [job], post="yes").status_code == 302
    assert LogEntry.objects.count() == 1
