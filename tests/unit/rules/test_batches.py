"""Batches' rules (``rules/batches.py``): what a callback may be, and which fire."""

from __future__ import annotations

import pytest

from django_sqlqueue.rules.batches import callback_spec, description_problem, fires
from tests.testapp.tasks import batch_done

TASK = "tests.testapp.tasks.batch_done"


@pytest.mark.parametrize(
    ("value", "spec"),
    [
        ((batch_done, ("x",)), {"task": TASK, "args": ["x"], "kwargs": {}}),
        ((TASK, [], {"token": "x"}), {"task": TASK, "args": [], "kwargs": {"token": "x"}}),
    ],
)
def test_a_callback_is_a_task_with_its_arguments(value: object, spec: dict[str, object]) -> None:
    assert callback_spec("on_finish", value) == spec


@pytest.mark.parametrize("value", [batch_done, TASK])
def test_a_bare_task_must_bind_with_batch_alone(value: object) -> None:
    with pytest.raises(ValueError, match="missing a required argument: 'token'"):
        callback_spec("on_finish", value)


def test_which_callbacks_fire() -> None:
    assert [when for when in ("on_success", "on_failure", "on_finish") if fires(when, 0)] == ["on_success", "on_finish"]
    assert [when for when in ("on_success", "on_failure", "on_finish") if fires(when, 2)] == ["on_failure", "on_finish"]


def test_description() -> None:
    assert description_problem("thumbnails") is None
    assert description_problem(3) == "description must be a string, not int"
    assert description_problem("x" * 256) == "description is 256 characters long, more than 255"
