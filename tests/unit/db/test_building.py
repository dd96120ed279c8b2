"""Building jobs (``db/building.py``): a job built with no option but its arguments (and
its queue, priority, max_attempts or timeout) is a copy of a template (``copy_of_template``),
and must be the job the long way builds, attribute for attribute, with nothing shared
between two of them. That a receiver of the model's init signals hears every job
built: ``test_instances``."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest
from django.test import override_settings

from django_sqlqueue.conf import remembered
from django_sqlqueue.db import building
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.models import Job
from django_sqlqueue.rules.registry import get_task
from tests.testapp.tasks import expiring, import_rows, noop, one_at_a_time, per_tenant, report, send_welcome, sync_order


def _attributes(job: Job) -> dict[str, Any]:
    held = {name: value for name, value in job.__dict__.items() if name != "_state"}
    expires_at = held.pop("expires_at")  # a new expression each time the long way: compared by its delay
    held["expires_in"] = getattr(expires_at, "delay", expires_at)
    return held


def _the_long_way(
    task: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, **options: Any
) -> Job:
    return Job.objects.build(task, args, kwargs, meta={}, **options)  # meta given: no template


@pytest.mark.parametrize(
    ("task", "args", "kwargs"),
    [
        (noop, (), None),
        (report, ("daily",), None),
        (send_welcome, (7,), {"greeting": "Hi"}),
        (expiring, ("t",), None),
        (import_rows, ("s3",), None),
        (one_at_a_time, (), None),
    ],
)
def test_a_job_built_with_arguments_alone_is_the_job_the_long_way_builds(
    task: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
) -> None:
    Job.objects.build(task, ("first",))  # the template, made by the first such build
    assert _attributes(Job.objects.build(task, args, kwargs)) == _attributes(_the_long_way(task, args, kwargs))


@pytest.mark.parametrize(
    "options",
    [
        {"queue": "emails"},
        {"priority": 5},
        {"max_attempts": 7, "timeout": 2.5},
        {"queue": "emails", "priority": -3, "max_attempts": 1, "timeout": datetime.timedelta(minutes=1)},
    ],
)
@pytest.mark.parametrize(("task", "args"), [(noop, ()), (report, ("daily",)), (expiring, ("t",))])
def test_a_job_built_with_common_options_is_the_job_the_long_way_builds(
    task: Callable[..., Any], args: tuple[Any, ...], options: dict[str, Any]
) -> None:
    Job.objects.build(task, ("first",), **options)  # the template for these options
    assert _attributes(Job.objects.build(task, args, **options)) == _attributes(_the_long_way(task, args, **options))
    # Another queue or priority is another template, not this one's.
    assert _attributes(Job.objects.build(task, args)) == _attributes(_the_long_way(task, args))


def test_an_option_of_another_type_is_another_template() -> None:
    assert type(Job.objects.build(noop, priority=True).priority) is bool  # refused when enqueued
    assert type(Job.objects.build(noop, priority=1).priority) is int


def test_options_no_template_can_hold_go_the_long_way() -> None:
    unhashable: Any = [1]
    assert Job.objects.build(noop, priority=unhashable).priority == unhashable  # refused when enqueued
    with pytest.raises(InvalidJobError, match="priority must be an integer"):
        Job.objects.enqueue(noop, priority=unhashable)


def test_a_task_keeps_a_bounded_number_of_templates() -> None:
    jobs = [Job.objects.build(report, ("x",), queue=f"tenant-{n}") for n in range(building.MOST_TEMPLATES + 10)]
    assert [job.queue for job in jobs] == [f"tenant-{n}" for n in range(building.MOST_TEMPLATES + 10)]
    assert len(remembered(("job templates", get_task(report).name), dict)) == building.MOST_TEMPLATES


def test_two_copies_share_no_list_or_dict() -> None:
    first, second = Job.objects.build(noop), Job.objects.build(noop)
    for name in ("args", "kwargs", "meta", "errors"):
        assert getattr(first, name) is not getattr(second, name), name
    first.args.append(1)
    assert (second.args, Job.objects.build(noop).args) == ([], [])


@pytest.mark.django_db
def test_a_copy_joins_the_batch_open_when_it_is_built() -> None:
    Job.objects.build(noop)
    with Job.objects.batch() as batch:
        inside = Job.objects.build(noop)
    assert (inside.batch_id, Job.objects.build(noop).batch_id) == (batch.pk, None)


_NO_OPTIONS = (None, None, None, None)


def test_tasks_that_derive_keys_from_their_arguments_go_the_long_way() -> None:
    for task, args in ((sync_order, (1,)), (per_tenant, ("a",))):
        assert building.copy_of_template(Job, get_task(task), args, None, _NO_OPTIONS, Job.objects.build) is None
    assert Job.objects.build(sync_order, (1,)).unique_key != Job.objects.build(sync_order, (2,)).unique_key
    tenants = [Job.objects.build(per_tenant, (tenant,)).concurrency_key for tenant in "ab"]
    assert tenants[0] != tenants[1]


def test_the_template_follows_the_settings() -> None:
    assert Job.objects.build(noop).queue == "default"
    with override_settings(SQLQUEUE_DEFAULT_QUEUE="elsewhere", SQLQUEUE_MAX_ATTEMPTS=9):
        built = Job.objects.build(noop)
    assert (built.queue, built.max_attempts) == ("elsewhere", 9)
    assert Job.objects.build(noop).queue == "default"


def _priority_of_text(job: Job) -> None:
    """An enqueue hook that sets what the checks refuse."""
    job.priority = "high"


_HOOK = f"{__name__}._priority_of_text"


@pytest.fixture
def counted_validations(monkeypatch: pytest.MonkeyPatch) -> list[Job]:
    """Every job :func:`building.validate` checks whole, as ``enqueue`` calls it."""
    checked: list[Job] = []
    validate = building.validate

    def counting(job: Job, **kwargs: Any) -> None:
        checked.append(job)
        validate(job, **kwargs)

    monkeypatch.setattr("django_sqlqueue.managers.enqueueing.validate", counting)
    return checked


@pytest.mark.django_db
def test_a_copy_of_a_template_that_passed_every_check_has_its_arguments_checked(
    counted_validations: list[Job],
) -> None:
    Job.objects.enqueue(send_welcome, (1,))  # the template, checked whole once
    assert Job.objects.enqueue(send_welcome, (2,)).pk is not None
    assert counted_validations == []
    with pytest.raises(InvalidJobError, match=r"Cannot enqueue .*send_welcome: args\[0\] is nan"):
        Job.objects.enqueue(send_welcome, (float("nan"),))
    with pytest.raises(InvalidJobError, match=r"Cannot enqueue .*send_welcome: .*argument"):
        Job.objects.enqueue(send_welcome, (1, 2, 3, 4))
    with pytest.raises(InvalidJobError, match="args must be a list or tuple, not str"):
        Job.objects.enqueue(send_welcome, "1")
    assert counted_validations == []
    assert Job.objects.count() == 2


@pytest.mark.django_db
def test_with_an_enqueue_hook_every_copy_is_checked_whole(counted_validations: list[Job]) -> None:
    Job.objects.enqueue(noop)  # a template made before the hook, which a copy must not trust
    with override_settings(SQLQUEUE_ENQUEUE_HOOKS=[_HOOK]):
        for _ in range(2):
            with pytest.raises(InvalidJobError, match="priority must be an integer"):
                Job.objects.enqueue(noop)
    assert len(counted_validations) == 2
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_a_template_the_checks_refuse_sends_every_copy_the_long_way(counted_validations: list[Job]) -> None:
    for _ in range(2):  # the second copies the template the first made
        with pytest.raises(InvalidJobError, match="priority must be an integer"):
            Job.objects.enqueue(noop, priority=True)
        with pytest.raises(InvalidJobError, match="max_attempts"):
            Job.objects.enqueue(noop, max_attempts=0)
    assert len(counted_validations) == 4
    assert not Job.objects.exists()


def test_a_template_holds_whether_its_copies_need_only_their_arguments_checked() -> None:
    registered = get_task(noop)
    made = building.copy_of_template(Job, registered, [], {}, _NO_OPTIONS, Job.objects.build)
    refused = building.copy_of_template(Job, registered, [], {}, (None, True, None, None), Job.objects.build)
    assert made is not None
    assert refused is not None
    assert (made[1].arguments_checked, refused[1].arguments_checked) == (True, False)
    with override_settings(SQLQUEUE_ENQUEUE_HOOKS=[_HOOK]):
        hooked = building.copy_of_template(Job, registered, [], {}, _NO_OPTIONS, Job.objects.build)
    assert hooked is not None
    assert not hooked[1].arguments_checked
