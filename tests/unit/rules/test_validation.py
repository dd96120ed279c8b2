"""What a job may carry (``validation.py``): JSON arguments and valid options, and
the proof on generated values that what is accepted comes back from the database as itself."""

from __future__ import annotations

import ast
import datetime
import decimal
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.validation import _a, arguments_problem, charset_problem, job_options_problem, json_problem
from tests.support.hostile import HOLDS_NUL, HOLDS_SURROGATE, PAST_64_BITS, TOO_DEEP, holding_itself, nested
from tests.testapp.tasks import noop

NOT_JSON = "which is not JSON: pass only None, bool, int, float, str, list and dict"


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        2**63 - 1,
        -(2**63),
        1.5,
        0.0,
        9.999999999999998e15,
        -9.999999999999998e15,
        5e-324,
        "",
        "naïve ✓",
        [],
        {},
        (1, "two", None),
        [1, [2, [3, {"four": (4.0, [False])}]]],
        {"a": {"b": [{"c": None}]}, "": 1},
        "😀 \x7f \u2028 \U0010ffff",
        {"ключ ✓": "\x01"},
        [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],  # 31 lists: the deepest MariaDB takes
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
        (object(), f"value is an object, {NOT_JSON}"),
        (..., f"value is an ellipsis, {NOT_JSON}"),
        (uuid.UUID(int=1), f"value is a uuid.UUID, {NOT_JSON}"),
        (decimal.Decimal("1.10"), f"value is a decimal.Decimal, {NOT_JSON}"),
        (float("nan"), "value is nan, which JSON cannot represent"),
        (float("inf"), "value is inf, which JSON cannot represent"),
        (float("-inf"), "value is -inf, which JSON cannot represent"),
        ({1: "one"}, "value has the key 1: JSON object keys must be strings"),
        ({None: "none"}, "value has the key None: JSON object keys must be strings"),
        ({("a",): 1}, "value has the key ('a',): JSON object keys must be strings"),
        (2**63, f"value is an integer of 64 bits, {PAST_64_BITS}"),
        (-(2**63) - 1, f"value is an integer of 64 bits, {PAST_64_BITS}"),
        (-(2**70), f"value is an integer of 71 bits, {PAST_64_BITS}"),
        (1e16, "value is 1e+16, a float PostgreSQL would give back as an int: pass an int or a string"),
        (-1e308, "value is -1e+308, a float PostgreSQL would give back as an int: pass an int or a string"),
        (-0.0, "value is -0.0, which PostgreSQL would give back as 0.0"),
        ("a\x00b", f"value {HOLDS_NUL}"),
        ("\ud800", f"value {HOLDS_SURROGATE}"),
        (
            "\ud83d\ude00",
            "value holds the surrogate '\\ud83d', which is not a character: decode text with errors='strict'",
        ),
        ({"a\x00": 1}, f"value has the key 'a\\x00', which {HOLDS_NUL}"),
        ({"\ud800": 1}, f"value has the key '\\ud800', which {HOLDS_SURROGATE}"),
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


def test_problem_names_the_path_in_the_call() -> None:
    args = [1, 2, {"items": ["a\x00"]}]
    assert arguments_problem(args, {}) == f"args[2]['items'][0] {HOLDS_NUL}"


def test_depth_counts_lists_and_dicts() -> None:
    """MariaDB's JSON_VALID takes 31 levels and refuses 32 (checked against the server
    in tests/unit/db/test_inserting.py); ``args`` is itself the first level."""
    assert json_problem(nested(31), "value") is None
    assert json_problem(nested(32), "value") == f"value{'[0]' * 31} {TOO_DEEP}"
    assert json_problem({"a": nested(30, {})}, "value") == f"value['a']{'[0]' * 30} {TOO_DEEP}"
    assert arguments_problem([nested(30)], {}) is None
    assert arguments_problem([nested(31)], {}) == f"args{'[0]' * 31} {TOO_DEEP}"


def test_nesting_past_the_recursion_limit_is_refused_in_words() -> None:
    assert json_problem(nested(sys.getrecursionlimit() * 10), "value") == f"value{'[0]' * 31} {TOO_DEEP}"


def test_a_value_that_holds_itself_is_refused_in_words() -> None:
    assert json_problem(holding_itself(), "value") == f"value{'[0]' * 31} {TOO_DEEP}"


def test_ints_past_the_int_to_string_limit_are_refused_in_words() -> None:
    huge = 10 ** (sys.get_int_max_str_digits() + 1)
    assert json_problem([huge], "args") == f"args[0] is an integer of {huge.bit_length()} bits, {PAST_64_BITS}"
    assert json_problem({huge: 1}, "kwargs") == (
        f"kwargs has the key an int of {huge.bit_length()} bits: JSON object keys must be strings"
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
        ([object()], {}, f"args[0] is an object, {NOT_JSON}"),
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
        {"max_attempts": 2**31 - 1},
        {"timeout": 1e300},
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
        ({"max_attempts": 0}, "max_attempts must be an integer from 1 to 2147483647, not 0"),
        ({"max_attempts": 2.0}, "max_attempts must be an integer from 1 to 2147483647, not 2.0"),
        ({"max_attempts": True}, "max_attempts must be an integer from 1 to 2147483647, not True"),
        ({"max_attempts": 2**31}, "max_attempts must be an integer from 1 to 2147483647, not 2147483648"),
        ({"priority": 2**15}, "priority must be an integer from -100 to 100, not 32768"),
        ({"timeout": 10**309}, "timeout must be a positive number of seconds or None, not " + str(10**309)),
        ({"queue": "a\x00"}, f"queue name 'a\\x00' {HOLDS_NUL}"),
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


# The round trip through the database, on generated values

#: What is hard to store: NUL, surrogates alone and in pairs, a character JSON joins,
#: characters past the Basic Multilingual Plane, and the ends of every number type.
HOSTILE_TEXT = st.text(alphabet=st.sampled_from(["a", "é", "\x00", "\x01", "\ud800", "\udfff", "😀", "\u2028", '"']))
HOSTILE_NUMBERS = st.sampled_from(
    [2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**64, 9.999999999999998e15, 1e16, 1e308, 5e-324, -0.0, 0.0]
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | HOSTILE_NUMBERS | st.text(max_size=5) | HOSTILE_TEXT
KEYS = st.text(max_size=3) | HOSTILE_TEXT | st.integers(-1, 1) | st.none()
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=3) | st.tuples(children) | st.dictionaries(KEYS, children, max_size=3),
    max_leaves=8,
)
DEEP = st.builds(nested, st.integers(27, 33), SCALARS)


def as_stored(value: Any) -> str:
    """``value`` as JSON text, for an exact comparison: ``1 == 1.0 == True`` and
    ``0.0 == -0.0`` in Python, but not here; dicts compare whatever their key order."""
    return json.dumps(value, sort_keys=True)


@pytest.mark.django_db
@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    # Each example runs in a savepoint of its own, rolled back at its end.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=VALUES | DEEP)
# Each database's own refusals and changes, whatever the generator draws.
@example(value="a\x00")
@example(value={"\ud800": 1})
@example(value=nested(31))
@example(value=nested(40))
@example(value=10 ** sys.get_int_max_str_digits())
@example(value=2**64)
@example(value=1e16)
@example(value=-0.0)
def test_a_value_is_refused_with_nothing_written_or_comes_back_the_same(value: Any) -> None:
    """Enqueued as an argument and a keyword argument, claimed, and returned as the
    task's result, on the database the tests run on."""
    with transaction.atomic():
        try:
            Job.objects.enqueue(noop, [value], {"value": value})
        except InvalidJobError:
            assert Job.objects.count() == 0
            return
        (claimed,) = Job.objects.claim(worker_id="w", limit=1)
        assert (as_stored(claimed.args), as_stored(claimed.kwargs)) == (as_stored([value]), as_stored({"value": value}))
        assert Job.objects.finish(worker_id="w", succeeded={claimed: claimed.args[0]}) == 1
        finished = Job.objects.get()
        assert (finished.status, as_stored(finished.result)) == (JobStatus.SUCCESSFUL, as_stored(value))
        transaction.set_rollback(True)


@pytest.mark.parametrize(
    ("text", "charset", "refused"),
    [
        ("reports", "ascii", None),
        ("répörts", "ascii", "é"),
        # MySQL's latin1 is Windows-1252 (the euro sign), with its five undefined bytes as C1 controls.
        ("répörts €\x81\x9d", "latin1", None),
        ("rapport ∑", "latin1", "∑"),
        ("レポート", "latin1", "レ"),
        ("レポート", "utf8mb3", None),
        ("reports 📈", "utf8mb3", "📈"),
        ("reports 📈", "utf8mb4", None),
        ("ελληνικά", "greek", None),
        ("ελληνικά ü", "greek", "ü"),
        # No Python codec of the name: ASCII alone.
        ("é", "dec8", "é"),
    ],
)
def test_charset_problem_names_the_first_character_a_mysql_charset_cannot_store(
    text: str, charset: str, refused: str | None
) -> None:
    expected = (
        None
        if refused is None
        else f"holds {refused!r} (U+{ord(refused):04X}), which the character set {charset} cannot store"
    )
    assert charset_problem(text, charset) == expected


@pytest.mark.parametrize(
    ("noun", "spoken"),
    [
        ("object", "an object"),
        ("int", "an int"),
        ("integer of 64 bits", "an integer of 64 bits"),
        ("set", "a set"),
        ("uuid.UUID", "a uuid.UUID"),
        ("URL", "a URL"),
        ("one-off", "a one-off"),
        ("hour", "an hour"),
    ],
)
def test_a_noun_takes_the_article_it_is_spoken_with(noun: str, spoken: str) -> None:
    assert _a(noun) == spoken


#: "a" or "an" and the word after it, in running text (not in ``a.b`` or ``'a'``).
ARTICLE = re.compile(r"(?<![\w.'`-])(an?) ([A-Za-z][\w.]*)", re.IGNORECASE)
PROJECT = Path(__file__).resolve().parents[2]


def texts(path: Path) -> list[str]:
    """The string literals of a module (its messages, f-strings' parts, docstrings), or a template."""
    if path.suffix == ".html":
        return [path.read_text()]
    return [
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_the_messages_say_a_and_an_as_spoken() -> None:
    """No "a object", "a integer" or "an hour"-style slip in what the package and the demo
    write, by the rule the messages' own :func:`_a` follows."""
    paths = [path for folder in ("django_sqlqueue", "testproject") for path in (PROJECT / folder).rglob("*.*")]
    slips = [
        f"{path.relative_to(PROJECT)}: {match[0]}"
        for path in paths
        if path.suffix in (".py", ".html")
        for text in texts(path)
        for match in ARTICLE.finditer(text)
        if _a(match[2]).split()[0] != match[1].lower()
    ]
    assert not slips
