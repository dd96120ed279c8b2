"""What a job may carry (``validation.py``): JSON arguments and valid options."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest

from django_sqlqueue.validation import arguments_problem, job_options_problem, json_problem

NOT_JSON = "which is not JSON: pass only None, bool, int, float, str, list and dict"


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -(2**70),
        1.5,
        -0.0,
        1e308,
        "",
        "naïve ✓",
        [],
        {},
        (1, "two", None),
        [1, [2, [3, {"four": (4.0, [False])}]]],
        {"a": {"b": [{"c": None}]}, "": 1},
    ],
)
def test_json_values_are_accepted(value: Any) -> None:
    assert json_problem(value, "value") is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (datetime.datetime(2030, 1, 1), f"value is a datetime.datetime, {NOT_JSON}"),
        (datetime.date(2030, 1, 1), f"value is a datetime.date, {NOT_JSON}"),
        (b"bytes", f"value is a bytes, {NOT_JSON}"),
        ({1, 2}, f"value is a set, {NOT_JSON}"),
        (frozenset(), f"value is a frozenset, {NOT_JSON}"),
        (object(), f"value is a object, {NOT_JSON}"),
        (decimal.Decimal("1.10"), f"value is a decimal.Decimal, {NOT_JSON}"),
        (float("nan"), "value is nan, which JSON cannot represent"),
        (float("inf"), "value is inf, which JSON cannot represent"),
        (float("-inf"), "value is -inf, which JSON cannot represent"),
        ({1: "one"}, "value has the key 1: JSON object keys must be strings"),
        ({None: "none"}, "value has the key None: JSON object keys must be strings"),
        ({("a",): 1}, "value has the key ('a',): JSON object keys must be strings"),
    ],
)
def test_values_that_do_not_round_trip_are_refused(value: Any, problem: str) -> None:
    assert json_problem(value, "value") == problem


def test_problem_names_the_path_to_the_value() -> None:
    value = {"users": [{"id": 1}, {"id": 2, "seen": {datetime.date(2030, 1, 1)}}]}
    assert json_problem(value, "kwargs") == f"kwargs['users'][1]['seen'] is a set, {NOT_JSON}"
    assert json_problem([0, (1, {"k": {2: 3}})], "args") == (
        "args[1][1]['k'] has the key 2: JSON object keys must be strings"
    )


def test_first_problem_is_reported() -> None:
    assert json_problem([1, b"x", float("nan")], "args") == f"args[1] is a bytes, {NOT_JSON}"


def test_arguments_accepted() -> None:
    assert arguments_problem((), {}) is None
    assert arguments_problem([1, "a", None, (2.5, True)], {"when": "2030-01-01", "ids": [1, 2]}) is None


@pytest.mark.parametrize(
    ("args", "kwargs", "problem"),
    [
        (
            (),
            {"when": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)},
            f"kwargs['when'] is a datetime.datetime, {NOT_JSON}",
        ),
        ((1, b"x"), {}, f"args[1] is a bytes, {NOT_JSON}"),
        ([object()], {}, f"args[0] is a object, {NOT_JSON}"),
        ((float("nan"),), {}, "args[0] is nan, which JSON cannot represent"),
        ((), {"ids": {1, 2}}, f"kwargs['ids'] is a set, {NOT_JSON}"),
        ((), {"amount": decimal.Decimal("9.99")}, f"kwargs['amount'] is a decimal.Decimal, {NOT_JSON}"),
        ((), {"by_id": {7: "x"}}, "kwargs['by_id'] has the key 7: JSON object keys must be strings"),
        ("abc", {}, "args must be a list or tuple, not str"),
        ({"a": 1}, {}, "args must be a list or tuple, not dict"),
        ((), [("a", 1)], "kwargs must be a dict, not list"),
        ((), None, "kwargs must be a dict, not NoneType"),
    ],
)
def test_arguments_refused(args: Any, kwargs: Any, problem: str) -> None:
    assert arguments_problem(args, kwargs) == problem


def test_args_are_checked_before_kwargs() -> None:
    assert arguments_problem([b"x"], {"y": b"y"}) == f"args[0] is a bytes, {NOT_JSON}"


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"queue": None, "priority": None, "max_attempts": None, "timeout": None},
        {"queue": "mail"},
        {"queue": "q" * 100},
        {"priority": -100},
        {"priority": 0},
        {"priority": 100},
        {"max_attempts": 1},
        {"max_attempts": 10**6},
        {"timeout": 0.001},
        {"timeout": 30},
    ],
)
def test_job_options_accepted(options: dict[str, Any]) -> None:
    assert job_options_problem(**options) is None


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"queue": ""}, "a queue name must be a non-empty string, not ''"),
        ({"queue": 1}, "a queue name must be a non-empty string, not 1"),
        ({"queue": "q" * 101}, f"queue name {'q' * 101!r} is longer than 100 characters"),
        ({"priority": 101}, "priority must be an integer from -100 to 100, not 101"),
        ({"priority": -101}, "priority must be an integer from -100 to 100, not -101"),
        ({"priority": 1.5}, "priority must be an integer from -100 to 100, not 1.5"),
        ({"priority": True}, "priority must be an integer from -100 to 100, not True"),
        ({"priority": "1"}, "priority must be an integer from -100 to 100, not '1'"),
        ({"max_attempts": 0}, "max_attempts must be an integer of at least 1, not 0"),
        ({"max_attempts": 2.0}, "max_attempts must be an integer of at least 1, not 2.0"),
        ({"max_attempts": True}, "max_attempts must be an integer of at least 1, not True"),
        ({"timeout": 0}, "timeout must be a positive number of seconds or None, not 0"),
        ({"timeout": -1}, "timeout must be a positive number of seconds or None, not -1"),
        ({"timeout": float("inf")}, "timeout must be a positive number of seconds or None, not inf"),
        ({"timeout": float("nan")}, "timeout must be a positive number of seconds or None, not nan"),
        ({"timeout": True}, "timeout must be a positive number of seconds or None, not True"),
        ({"timeout": "5"}, "timeout must be a positive number of seconds or None, not '5'"),
    ],
)
def test_job_options_refused(options: dict[str, Any], problem: str) -> None:
    assert job_options_problem(**options) == problem


def test_queue_must_be_one_of_sqlqueue_queues(settings: Any) -> None:
    settings.SQLQUEUE_QUEUES = ["mail", "default"]
    assert job_options_problem(queue="mail") is None
    assert job_options_problem(queue="reports") == "queue 'reports' is not one of SQLQUEUE_QUEUES ['default', 'mail']"
