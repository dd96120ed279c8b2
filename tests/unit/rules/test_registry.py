"""The task registry and ``@job`` (``registry.py``)."""

from __future__ import annotations

import logging
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_sqlqueue import job
from django_sqlqueue.exceptions import UnknownTaskError
from django_sqlqueue.models import Job
from django_sqlqueue.rules import registry
from django_sqlqueue.rules.registry import RegisteredTask, get_task
from tests.testapp.tasks import noop, report


@pytest.fixture(autouse=True)
def restore_registry() -> Iterator[None]:
    """Undo every registration a test makes: the registry is module-global.

    The one place the tests touch the registry's private dicts: the registry has no
    public way to forget a task (a project never needs one)."""
    # Discover first, or a test that triggers discovery would drop the discovered tasks
    # on restore while autodiscover(), cached, would never bring them back.
    registry.autodiscover()
    by_name = dict(registry._tasks_by_name)
    by_func = dict(registry._tasks_by_func)
    yield
    registry._tasks_by_name.clear()
    registry._tasks_by_name.update(by_name)
    registry._tasks_by_func.clear()
    registry._tasks_by_func.update(by_func)


# Undecorated module-level functions that tests register, then unregister.
def first(x: int) -> int:
    return x + 1


def second() -> None:
    pass


def copy_of(func: Callable[..., Any], qualname: str) -> Callable[..., Any]:
    """A distinct module-level-looking function with the same code as ``func``."""
    made = types.FunctionType(func.__code__, func.__globals__, qualname)
    made.__qualname__ = qualname
    return made


def test_bare_decorator_registers_under_the_dotted_path() -> None:
    assert job(first) is first
    assert get_task(first) == RegisteredTask(name="tests.unit.rules.test_registry.first", func=first)
    assert get_task("tests.unit.rules.test_registry.first") is get_task(first)


def test_decorated_function_is_unchanged_and_still_callable() -> None:
    decorated = job(queue="mail")(first)
    assert decorated is first
    assert decorated(41) == 42
    assert report("monthly") == "monthly"


def test_decorator_options_become_the_task_defaults() -> None:
    job(queue="mail", priority=-5, max_attempts=9, timeout=2.5)(first)
    assert get_task(first) == RegisteredTask(
        name="tests.unit.rules.test_registry.first", func=first, queue="mail", priority=-5, max_attempts=9, timeout=2.5
    )


def test_task_module_defaults_are_registered_at_import() -> None:
    assert get_task(noop) == RegisteredTask(name="tests.testapp.tasks.noop", func=noop)
    assert get_task(report) == RegisteredTask(
        name="tests.testapp.tasks.report", func=report, queue="reports", priority=10, max_attempts=2, timeout=5
    )


def test_custom_name() -> None:
    job(name="billing.charge")(first)
    assert get_task("billing.charge").func is first
    assert get_task(first).name == "billing.charge"
    with pytest.raises(UnknownTaskError):
        get_task("tests.unit.rules.test_registry.first")


def test_installed_apps_tasks_are_found_by_name() -> None:
    from tests.testapp.tasks import fail

    assert get_task("testapp.fail").func is fail


def test_registering_the_same_function_again_is_harmless() -> None:
    job(first)
    job(priority=3)(first)
    assert get_task(first).priority == 3


def test_jobs_built_after_a_task_registers_again_take_its_new_options() -> None:
    job(queue="mail", max_attempts=2)(first)
    assert Job.objects.build(first, (1,)).queue == "mail"
    job(queue="reports", max_attempts=5)(first)
    built = Job.objects.build(first, (1,))
    assert (built.queue, built.max_attempts) == ("reports", 5)


def test_a_reloaded_module_replaces_its_function() -> None:
    """A module reload makes a new function object with the same dotted path."""
    job(first)
    reloaded = copy_of(first, "first")
    job(reloaded)
    assert get_task("tests.unit.rules.test_registry.first").func is reloaded


def test_name_taken_by_another_function_is_refused() -> None:
    job(name="shared.name")(first)
    with pytest.raises(ImproperlyConfigured) as excinfo:
        job(name="shared.name")(second)
    assert str(excinfo.value) == (
        "Task name 'shared.name' is already registered for tests.unit.rules.test_registry.first."
    )
    assert get_task("shared.name").func is first
    with pytest.raises(UnknownTaskError):
        get_task(second)


def test_default_name_of_another_task_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured) as excinfo:
        job(name="tests.testapp.tasks.noop")(second)
    assert (
        str(excinfo.value) == "Task name 'tests.testapp.tasks.noop' is already registered for tests.testapp.tasks.noop."
    )
    assert get_task("tests.testapp.tasks.noop").func is noop


def test_nested_function_is_refused() -> None:
    def inner() -> None:
        pass

    with pytest.raises(ImproperlyConfigured) as excinfo:
        job(inner)
    assert str(excinfo.value) == (
        "Cannot register 'tests.unit.rules.test_registry.test_nested_function_is_refused.<locals>.inner': a function "
        "defined inside another function cannot be found by a worker. Define it at module level."
    )
    names = {task.name for task in registry.registered_tasks()}
    assert "tests.unit.rules.test_registry.test_nested_function_is_refused.<locals>.inner" not in names
    with pytest.raises(UnknownTaskError):
        get_task(inner)


def test_name_longer_than_the_column_is_refused() -> None:
    name = "x" * 256
    with pytest.raises(ImproperlyConfigured) as excinfo:
        job(name=name)(first)
    assert str(excinfo.value) == f"Task name {name!r} is longer than 255 characters."
    job(name="x" * 255)(first)
    assert get_task(first).name == "x" * 255


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"priority": 101}, "priority must be an integer from -100 to 100, not 101"),
        ({"priority": -101}, "priority must be an integer from -100 to 100, not -101"),
        ({"max_attempts": 0}, "max_attempts must be an integer from 1 to 2147483647, not 0"),
        ({"timeout": -1}, "timeout must be a positive number of seconds or None, not -1"),
        ({"timeout": 0}, "timeout must be a positive number of seconds or None, not 0"),
        ({"queue": ""}, "a queue name must be a non-empty string, not ''"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ImproperlyConfigured) as excinfo:
        job(**options)(first)
    assert str(excinfo.value) == f"@job on 'tests.unit.rules.test_registry.first': {problem}."
    with pytest.raises(UnknownTaskError):
        get_task(first)


def test_queue_outside_sqlqueue_queues_is_refused(settings: Any) -> None:
    settings.SQLQUEUE_QUEUES = ["default", "mail"]
    with pytest.raises(ImproperlyConfigured) as excinfo:
        job(queue="reports")(first)
    assert str(excinfo.value) == (
        "@job on 'tests.unit.rules.test_registry.first': "
        "queue 'reports' is not one of SQLQUEUE_QUEUES ['default', 'mail']."
    )


def test_unknown_function() -> None:
    with pytest.raises(UnknownTaskError) as excinfo:
        get_task(second)
    assert str(excinfo.value) == (
        "tests.unit.rules.test_registry.second is not a registered task: decorate it with @django_sqlqueue.job."
    )


def test_unknown_name() -> None:
    with pytest.raises(UnknownTaskError) as excinfo:
        get_task("tests.testapp.tasks.missing")
    assert str(excinfo.value) == (
        "No task is registered as 'tests.testapp.tasks.missing'. Tasks are registered by @django_sqlqueue.job, "
        "or by Django's @task with the SQLQueueBackend, in a module that is imported: "
        "an installed app's tasks.py is imported for you."
    )


def test_unknown_task_error_is_a_lookup_error() -> None:
    with pytest.raises(LookupError):
        get_task("tests.testapp.tasks.missing")


def test_registered_tasks_lists_every_app_task_and_each_once() -> None:
    names = [task.name for task in registry.registered_tasks()]
    assert {"sqlqueue.noop", "demo.fail", "testproject.demo.tasks.add", "tests.testapp.tasks.report"} <= set(names)
    assert len(names) == len(set(names))


def test_whether_a_task_is_a_coroutine_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Callable[..., Any]] = []

    def counted(func: Callable[..., Any]) -> bool:
        asked.append(func)
        return False

    async def later() -> None:
        """An async task."""

    monkeypatch.setattr(registry, "iscoroutinefunction", counted)
    plain = RegisteredTask(name="t.plain", func=noop)
    assert (plain.is_coroutine, plain.is_coroutine) == (False, False)
    assert asked == [noop]
    monkeypatch.undo()
    assert RegisteredTask(name="t.later", func=later).is_coroutine


def test_a_task_in_a_module_the_workers_never_import_is_warned_about_at_its_first_enqueue(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A view module is imported by a web request, never by a worker: its tasks' jobs
    would fail with UnknownTaskError. An installed app's tasks module, or a module of
    its tasks package, is one a worker imports."""
    in_views = copy_of(first, "in_views")
    in_views.__module__ = "tests.testapp.views"
    job(in_views)
    for module in ("tests.testapp.tasks", "tests.testapp.tasks.billing"):
        in_tasks = copy_of(first, "in_tasks")
        in_tasks.__module__ = module
        job(in_tasks)
        Job.objects.build(in_tasks, (1,))
    with caplog.at_level(logging.WARNING, logger="django_sqlqueue"):
        Job.objects.build(in_views, (1,))
        Job.objects.build(in_views, (2,))
        get_task("tests.testapp.views.in_views")
    assert [record.getMessage() for record in caplog.records] == [
        "Task 'tests.testapp.views.in_views' is registered in tests.testapp.views, which the workers never "
        "import: its jobs would fail with UnknownTaskError. Define it in an installed app's tasks module "
        "(tasks.py), and import it from there."
    ]
