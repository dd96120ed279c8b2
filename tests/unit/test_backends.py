"""The backend against what Django's documentation promises of a task backend:
enqueue, defer, priority, queues, validation, results read back from any process."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any, cast

import pytest
from asgiref.sync import async_to_sync
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from django_sqlqueue.backends import SQLQueueBackend, SQLQueueTask
from django_sqlqueue.backends.compat import (
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    task,
    task_backends,
    task_enqueued,
)
from django_sqlqueue.exceptions import InvalidJobError, UnknownTaskError
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.registry import get_task
from tests.djtasks.tasks import add, async_double, fail, whoami
from tests.support.task_options import needs_task_options
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db

BACKEND = "django_sqlqueue.backends.SQLQueueBackend"


def tasks_setting(**params: Any) -> dict[str, Any]:
    return {"default": {"BACKEND": BACKEND, "QUEUES": ["default", "reports"], **params}}


@pytest.fixture
def enqueued() -> Iterator[list[tuple[type, TaskResult[..., Any]]]]:
    sent: list[tuple[type, TaskResult[..., Any]]] = []

    def receive(sender: type, task_result: TaskResult[..., Any], **kwargs: Any) -> None:
        sent.append((sender, task_result))

    task_enqueued.connect(receive)
    yield sent
    task_enqueued.disconnect(receive)


# Undecorated module-level functions that tests make tasks of.
def report(name: str) -> str:
    return name


def needs_context(label: str) -> None:
    """Says it takes context, but its first argument is not ``context``."""


# The backend


def test_the_backend_supports_every_feature() -> None:
    backend = task_backends["default"]
    assert type(backend) is SQLQueueBackend
    assert (
        backend.supports_defer,
        backend.supports_priority,
        backend.supports_get_result,
        backend.supports_async_task,
    ) == (True, True, True, True)
    assert isinstance(add, SQLQueueTask)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"retries": 3},
            "TASKS['default']['OPTIONS'] has unknown keys ['retries']: "
            "it takes max_attempts, timeout, expires_in, MAX_ATTEMPTS, BACKOFF.",
        ),
        (
            {"max_attempts": 0},
            "TASKS['default']['OPTIONS']: max_attempts must be an integer from 1 to 2147483647, not 0.",
        ),
        (
            {"timeout": -1},
            "TASKS['default']['OPTIONS']: timeout must be a positive number of seconds or None, not -1.",
        ),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], message: str) -> None:
    with override_settings(TASKS=tasks_setting(OPTIONS=options)), pytest.raises(ImproperlyConfigured) as excinfo:
        task_backends["default"]
    assert str(excinfo.value) == message


# Validation: Django's rules, then ours


def test_tasks_are_registered_under_their_module_path_when_created() -> None:
    registered = get_task("tests.djtasks.tasks.whoami")
    assert (registered.func, registered.django_task) == (whoami.func, whoami)
    # A variant made by using() keeps the registration of the task itself.
    whoami.using(priority=3)
    assert get_task("tests.djtasks.tasks.whoami").django_task is whoami


def _never_registered() -> None:
    """A module-level function no ``@task`` of ours wraps."""


def test_validating_a_task_registers_nothing() -> None:
    backend = task_backends["default"]
    # Django's own Task class, not ours: our backend validates it, and nothing registers it.
    plain: Task[[], None] = Task(
        priority=0, func=_never_registered, backend="default", queue_name="default", run_after=None
    )
    backend.validate_task(plain)
    with pytest.raises(UnknownTaskError):
        get_task(_never_registered)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: add.using(queue_name="elsewhere"), "Queue 'elsewhere' is not valid for backend."),
        (lambda: add.using(priority=101), "priority must be a whole number between -100 and 100."),
        (
            lambda: add.using(run_after=datetime.datetime(2030, 1, 1)),
            "run_after must be an aware datetime.",
        ),
        (
            lambda: task(takes_context=True)(needs_context),  # type: ignore[arg-type]
            "Task takes context but does not have a first argument of 'context'.",
        ),
    ],
)
def test_django_rules_are_kept(make: Any, message: str) -> None:
    with pytest.raises(InvalidTask) as excinfo:
        make()
    assert str(excinfo.value) == message


def test_our_queue_rules_apply_too() -> None:
    with override_settings(SQLQUEUE_QUEUES=["default"]), pytest.raises(InvalidTask) as excinfo:
        add.using(queue_name="reports")
    assert str(excinfo.value) == ("tests.djtasks.tasks.add: queue 'reports' is not one of SQLQUEUE_QUEUES ['default'].")


# Enqueue


def test_enqueue_writes_a_job_and_returns_its_result(
    enqueued: list[tuple[type, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        result = add.enqueue(2, b=3)

    job = Job.objects.get()
    assert (job.task, job.args, job.kwargs, job.queue, job.priority, job.status) == (
        "tests.djtasks.tasks.add",
        [2],
        {"b": 3},
        "default",
        0,
        JobStatus.READY,
    )
    assert (result.id, result.status, result.args, result.kwargs, result.backend) == (
        str(job.pk),
        TaskResultStatus.READY,
        [2],
        {"b": 3},
        "default",
    )
    assert result.enqueued_at == job.enqueued_at
    assert (result.started_at, result.finished_at, result.errors, result.worker_ids) == (None, None, [], [])
    assert not result.is_finished
    with pytest.raises(ValueError, match="Task has not finished yet"):
        _ = result.return_value
    assert enqueued == [(SQLQueueBackend, result)]


class Rollback(Exception):
    pass


def enqueue_then_roll_back() -> None:
    with transaction.atomic():
        add.enqueue(1, 2)
        assert Job.objects.count() == 1
        raise Rollback


def test_enqueue_is_part_of_the_callers_transaction() -> None:
    with pytest.raises(Rollback):
        enqueue_then_roll_back()
    assert Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_task_enqueued_is_sent_once_the_enqueue_commits_and_never_for_a_rollback(
    enqueued: list[tuple[type, Any]],
) -> None:
    with pytest.raises(Rollback):
        enqueue_then_roll_back()
    assert enqueued == []
    with transaction.atomic():
        result = add.enqueue(3, 4)
        assert enqueued == []
    assert enqueued == [(SQLQueueBackend, result)]
    # Outside a transaction the enqueue commits at once: sent at once.
    assert [sent.id for _, sent in enqueued] == [result.id]
    alone = add.enqueue(5, 6)
    assert [sent.id for _, sent in enqueued] == [result.id, alone.id]


#: ``add`` as our backend makes it (its type is Django's Task).
on_commit = cast(SQLQueueTask, add)


def enqueue_on_commit_then_roll_back() -> None:
    with transaction.atomic():
        on_commit.enqueue_on_commit(1, 2)
        raise Rollback


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_waits_for_the_commit_and_never_enqueues_for_a_rollback(
    enqueued: list[tuple[type, Any]],
) -> None:
    with pytest.raises(Rollback):
        enqueue_on_commit_then_roll_back()
    assert Job.objects.count() == 0
    with transaction.atomic():
        cast(SQLQueueTask, on_commit.using(priority=5)).enqueue_on_commit(3, b=4)
        assert Job.objects.count() == 0
    job = Job.objects.get()
    assert (job.args, job.kwargs, job.priority) == ([3], {"b": 4}, 5)
    assert [sent.id for _, sent in enqueued] == [str(job.pk)]
    # Outside a transaction, at once.
    on_commit.enqueue_on_commit(5, 6)
    assert Job.objects.count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: on_commit.enqueue_on_commit(1, {1, 2}), "Cannot enqueue tests.djtasks.tasks.add: args[1] is a set"),
        (
            lambda: on_commit.enqueue_on_commit(1),
            "its arguments do not fit add(a, b): missing a required argument: 'b'",
        ),
        (lambda: on_commit.with_meta({"x": "\0"}).enqueue_on_commit(1, 2), "meta"),
    ],
)
def test_enqueue_on_commit_refuses_bad_arguments_at_once(call: Any, message: str) -> None:
    with transaction.atomic():
        with pytest.raises(InvalidJobError) as excinfo:
            call()
        assert message in str(excinfo.value)
    assert Job.objects.count() == 0


def test_queue_priority_and_run_after_become_the_jobs() -> None:
    later = timezone.now() + datetime.timedelta(hours=1)
    result = add.using(queue_name="reports", priority=-7, run_after=later).enqueue(1, 1)

    job = Job.objects.get()
    assert (job.queue, job.priority, job.run_at) == ("reports", -7, later)
    assert (result.task.queue_name, result.task.priority, result.task.run_after) == ("reports", -7, later)
    # Deferred: not claimable until then.
    assert list(Job.objects.claim(worker_id="w")) == []


def test_higher_priority_runs_first() -> None:
    low = add.using(priority=-5).enqueue(1, 1)
    high = add.using(priority=50).enqueue(2, 2)
    middle = add.enqueue(3, 3)
    assert [str(job.pk) for job in Job.objects.claim(worker_id="w")] == [high.id, middle.id, low.id]


def test_options_defaults_come_from_the_backend() -> None:
    with override_settings(TASKS=tasks_setting(OPTIONS={"max_attempts": 7, "timeout": 12.5})):
        add.enqueue(1, 1)
    assert Job.objects.values_list("max_attempts", "timeout").get() == (7, 12.5)


def test_expiry_comes_from_the_backends_options() -> None:
    with override_settings(TASKS=tasks_setting(OPTIONS={"expires_in": 90})):
        add.enqueue(1, 1)
    made = Job.objects.get()
    assert made.expires_at is not None
    assert made.expires_at - made.enqueued_at == datetime.timedelta(seconds=90)
    with override_settings(TASKS=tasks_setting(OPTIONS={"expires_in": -1})), pytest.raises(ImproperlyConfigured):
        task_backends["default"]


@needs_task_options
def test_a_tasks_own_expiry() -> None:
    expiring = task(expires_in=30)(report)  # type: ignore[call-overload]
    with override_settings(TASKS=tasks_setting(OPTIONS={"expires_in": 90})):
        expiring.enqueue("daily")
    made = Job.objects.get()
    assert made.expires_at is not None
    assert made.expires_at - made.enqueued_at == datetime.timedelta(seconds=30)


def test_options_default_to_settings() -> None:
    with override_settings(SQLQUEUE_MAX_ATTEMPTS=4, SQLQUEUE_TIMEOUT=9):
        add.enqueue(1, 1)
    assert Job.objects.values_list("max_attempts", "timeout").get() == (4, 9)


@needs_task_options
def test_task_options_come_from_the_decorator() -> None:
    reporting = task(queue_name="reports", max_attempts=5, timeout=30)(report)  # type: ignore[call-overload]
    assert (reporting.max_attempts, reporting.timeout) == (5, 30)
    with override_settings(TASKS=tasks_setting(OPTIONS={"max_attempts": 7, "timeout": 12.5})):
        reporting.enqueue("monthly")
    assert Job.objects.values_list("queue", "max_attempts", "timeout").get() == ("reports", 5, 30)
    with pytest.raises(InvalidTask) as excinfo:
        task(max_attempts=0)(report)  # type: ignore[call-overload]
    assert (
        str(excinfo.value)
        == "tests.unit.test_backends.report: max_attempts must be an integer from 1 to 2147483647, not 0."
    )


def unique_report(kind: str, note: str = "") -> str:
    return kind


@needs_task_options
def test_a_unique_task_returns_the_result_of_the_job_holding_its_key() -> None:
    unique = task(unique=("kind",))(unique_report)  # type: ignore[call-overload]
    first = unique.enqueue("monthly", "a")
    assert unique.enqueue("monthly", "b").id == first.id
    assert unique.enqueue("weekly").id != first.id
    assert Job.objects.get(pk=first.id).unique_key == 'tests.unit.test_backends.unique_report:{"kind":"monthly"}'


@needs_task_options
@pytest.mark.django_db(transaction=True)
def test_a_unique_tasks_enqueue_that_returns_the_holder_sends_no_task_enqueued(
    enqueued: list[tuple[type, Any]],
) -> None:
    unique = task(unique=("kind",))(unique_report)  # type: ignore[call-overload]
    first = unique.enqueue("yearly")
    assert unique.enqueue("yearly").id == first.id
    assert [sent.id for _, sent in enqueued] == [first.id]


def tagged_report(kind: str) -> str:
    return kind


@needs_task_options
def test_a_tasks_tags_and_an_enqueues_tags_and_meta_are_the_jobs() -> None:
    reporting = task(tags=["reports", "reports"])(tagged_report)  # type: ignore[call-overload]
    assert reporting.tags == ("reports",)
    assert get_task(reporting.func).tags == ("reports",)
    plain = reporting.enqueue("monthly")
    extra = reporting.tagged("tenant:42").with_meta({"by": "alice"}).with_meta({"why": "audit"}).enqueue("weekly")
    assert list(Job.objects.tagged("reports").order_by("pk").values_list("pk", flat=True)) == [
        int(plain.id),
        int(extra.id),
    ]
    assert list(Job.objects.tagged("tenant:42").values_list("pk", "meta")) == [
        (int(extra.id), {"by": "alice", "why": "audit"})
    ]
    # A copy's tags and meta are that enqueue's: the task's own are left as they were.
    assert (reporting.tags, reporting.meta, Job.objects.get(pk=plain.id).meta) == (("reports",), None, {})


@needs_task_options
def test_bad_tags_and_meta_are_refused_and_nothing_is_written() -> None:
    with pytest.raises(InvalidTask, match=r"tests\.unit\.test_backends\.tagged_report: tags must be a list of strings"):
        task(tags="reports")(tagged_report)  # type: ignore[call-overload]
    reporting = task(tags=["reports"])(tagged_report)  # type: ignore[call-overload]
    with pytest.raises(InvalidTask, match="tag 'no spaces' holds characters other than"):
        reporting.tagged("no spaces")
    with pytest.raises(InvalidJobError, match="meta"):
        reporting.with_meta({"when": datetime.date(2030, 1, 1)}).enqueue("monthly")
    assert Job.objects.count() == 0


def unique_once(kind: str) -> str:
    return kind


@needs_task_options
def test_a_task_may_keep_its_key_until_pruned() -> None:
    once = task(unique=True, unique_until="pruned")(unique_once)  # type: ignore[call-overload]
    first = once.enqueue("welcome")
    Job.objects.filter(pk=first.id).update(status=JobStatus.SUCCESSFUL)
    assert once.enqueue("welcome").id == first.id


def test_arguments_must_be_json() -> None:
    with pytest.raises(InvalidJobError, match=r"args\[0\] is a datetime.date, which is not JSON"):
        add.enqueue(datetime.date(2030, 1, 1), 1)  # type: ignore[arg-type]
    assert Job.objects.count() == 0


def test_arguments_the_function_cannot_take_are_refused() -> None:
    with pytest.raises(InvalidJobError) as excinfo:
        add.enqueue(1, 2, c=3)  # type: ignore[call-arg]
    assert str(excinfo.value) == (
        "Cannot enqueue tests.djtasks.tasks.add: its arguments do not fit add(a, b): "
        "got an unexpected keyword argument 'c'."
    )
    # A task that takes its context is given it first by the worker: its arguments are the rest.
    with pytest.raises(InvalidJobError, match=r"do not fit whoami\(label\): missing a required argument: 'label'"):
        whoami.enqueue()  # type: ignore[call-arg]
    assert Job.objects.count() == 0
    whoami.enqueue("hi")
    assert Job.objects.count() == 1


def test_aenqueue_and_aget_result() -> None:
    result = async_to_sync(async_double.aenqueue)(21)
    assert Job.objects.get().args == [21]
    fetched = async_to_sync(async_double.aget_result)(result.id)
    assert (fetched.id, fetched.status, fetched.args) == (result.id, TaskResultStatus.READY, [21])


# Results


def test_get_result_reads_the_row() -> None:
    result = whoami.enqueue("x")
    fetched = whoami.get_result(result.id)
    assert fetched == result
    assert fetched.task is whoami


def test_get_result_of_a_finished_job() -> None:
    result = add.enqueue(2, 3)
    (job,) = Job.objects.claim(worker_id="worker-1")
    Job.objects.finish(worker_id="worker-1", succeeded={job: 5})

    result.refresh()
    job.refresh_from_db()
    assert (result.status, result.return_value, result.is_finished) == (TaskResultStatus.SUCCESSFUL, 5, True)
    assert (result.started_at, result.last_attempted_at, result.finished_at) == (
        job.started_at,
        job.started_at,
        job.finished_at,
    )
    assert (result.worker_ids, result.attempts, result.errors) == (["worker-1"], 1, [])


def test_a_task_waits_for_the_results_it_is_enqueued_after() -> None:
    first, second = add.enqueue(1, 2), add.enqueue(3, 4)
    assert isinstance(add, SQLQueueTask)
    waiting = add.waiting_for(first, int(second.id), after_failure="run").enqueue(5, 6)
    job = Job.objects.get(pk=waiting.id)
    assert (job.status, job.waiting_for, job.runs_after_failure) == (JobStatus.WAITING, 2, True)
    assert waiting.status == TaskResultStatus.READY  # as Django knows it
    claimed = Job.objects.claim(worker_id="worker-1")
    assert sorted(job.pk for job in claimed) == sorted(int(result.id) for result in (first, second))
    Job.objects.finish(worker_id="worker-1", succeeded=dict.fromkeys(claimed, 3))
    waiting.refresh()
    assert (waiting.status, Job.objects.get(pk=waiting.id).status) == (TaskResultStatus.READY, JobStatus.READY)


def test_every_attempts_worker_and_error_are_kept() -> None:
    result = fail.enqueue("boom")
    Job.objects.update(max_attempts=2)
    for worker in ("worker-1", "worker-2"):
        (job,) = Job.objects.claim(worker_id=worker)
        Job.objects.finish(worker_id=worker, failed={job: ValueError("boom")})
        Job.objects.update(run_at=timezone.now() - datetime.timedelta(hours=1))

    async_to_sync(result.arefresh)()
    assert (result.status, result.worker_ids, result.attempts) == (
        TaskResultStatus.FAILED,
        ["worker-1", "worker-2"],
        2,
    )
    assert [error.exception_class for error in result.errors] == [ValueError, ValueError]
    assert result.errors[0].traceback == "ValueError: boom\n"
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value


def test_attempts_and_workers_count_every_attempt_across_an_admin_retry() -> None:
    result = fail.enqueue("boom")
    Job.objects.update(max_attempts=1)
    (job,) = Job.objects.claim(worker_id="worker-1")
    Job.objects.finish(worker_id="worker-1", failed={job: ValueError("boom")})
    Job.objects.retry(Job.objects.all())
    (job,) = Job.objects.claim(worker_id="worker-2")

    result.refresh()
    assert (result.status, result.worker_ids, result.attempts) == (
        TaskResultStatus.RUNNING,
        ["worker-1", "worker-2"],
        2,
    )
    Job.objects.finish(worker_id="worker-2", succeeded={job: None})
    result.refresh()
    assert (result.status, result.worker_ids, result.attempts) == (
        TaskResultStatus.SUCCESSFUL,
        ["worker-1", "worker-2"],
        2,
    )
    assert [error.exception_class for error in result.errors] == [ValueError]


def test_a_cancelled_job_is_failed() -> None:
    result = add.enqueue(1, 1)
    Job.objects.update(status=JobStatus.CANCELLED)
    result.refresh()
    assert (result.status, result.is_finished) == (TaskResultStatus.FAILED, True)


@pytest.mark.parametrize("result_id", ["12345", "abc", "", "1.5", "-1", "\u0661"])
def test_get_result_of_no_job(result_id: str) -> None:
    with pytest.raises(TaskResultDoesNotExist) as excinfo:
        task_backends["default"].get_result(result_id)
    assert str(excinfo.value) == result_id


def test_get_result_of_a_job_that_is_no_django_task() -> None:
    job = Job.objects.enqueue(noop)
    unknown = Job.objects.create(task="tests.support.poison.run", max_attempts=1, queue="default")
    backend = task_backends["default"]
    with pytest.raises(TaskResultDoesNotExist) as excinfo:
        backend.get_result(str(job.pk))
    assert str(excinfo.value) == f"Job {job.pk} runs 'tests.testapp.tasks.noop', which is not a registered Django task."
    with pytest.raises(TaskResultDoesNotExist) as excinfo:
        backend.get_result(str(unknown.pk))
    assert (
        str(excinfo.value)
        == f"Job {unknown.pk} runs 'tests.support.poison.run', which is not a registered Django task."
    )


def test_get_result_of_another_task_is_a_mismatch() -> None:
    result = add.enqueue(1, 1)
    with pytest.raises(TaskResultMismatch) as excinfo:
        whoami.get_result(result.id)
    assert str(excinfo.value) == "Task does not match (received 'tests.djtasks.tasks.add')"
