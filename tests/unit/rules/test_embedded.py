"""What SQLQUEUE_EMBEDDED may hold."""

from __future__ import annotations

from typing import Any

import pytest

from django_sqlqueue.rules.embedded import MAX_EMBEDDED_THREADS, Embedded, parse_embedded


def test_every_key_is_optional() -> None:
    assert parse_embedded({}, allowed=None) == Embedded(queues=None, threads=1)


def test_queues_and_threads_are_kept() -> None:
    parsed = parse_embedded({"queues": ["mail"], "threads": MAX_EMBEDDED_THREADS}, allowed=frozenset({"mail"}))
    assert parsed == Embedded(queues=("mail",), threads=MAX_EMBEDDED_THREADS)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (
            [("queues", ["mail"])],
            "must be None (off) or a dict with 'queues' and 'threads', not [('queues', ['mail'])]",
        ),
        ({"threads": 2, "procs": 2}, "unknown keys ['procs']: only ['queues', 'threads'] are read"),
        ({"queues": "mail"}, "'queues' must be a non-empty list of queue names or None (every queue), not 'mail'"),
        ({"queues": []}, "'queues' must be a non-empty list of queue names or None (every queue), not []"),
        ({"queues": [""]}, "a queue name must be a non-empty string, not ''"),
        ({"threads": True}, f"'threads' must be an integer from 1 to {MAX_EMBEDDED_THREADS}, not True"),
        ({"threads": 2.0}, f"'threads' must be an integer from 1 to {MAX_EMBEDDED_THREADS}, not 2.0"),
        (
            {"threads": MAX_EMBEDDED_THREADS + 1},
            f"'threads' must be an integer from 1 to {MAX_EMBEDDED_THREADS}, not {MAX_EMBEDDED_THREADS + 1}",
        ),
    ],
)
def test_bad_values_say_what_is_wrong(value: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=r".") as raised:
        parse_embedded(value, allowed=None)
    assert str(raised.value) == problem
