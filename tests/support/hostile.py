"""Values some database refuses or changes, and the exact words in which the validator
refuses them: shared by the validator's tests and the insert's."""

from __future__ import annotations

from typing import Any

PAST_64_BITS = "past the 64-bit range that every database's JSON stores exactly: pass it as a string"
HOLDS_NUL = "holds the character NUL (\\x00), which PostgreSQL cannot store"
HOLDS_SURROGATE = "holds the surrogate '\\ud800', which is not a character: decode text with errors='strict'"
TOO_DEEP = "is nested deeper than 31 lists and dicts, which MariaDB refuses"


def nested(depth: int, inner: Any = 1) -> Any:
    """``inner`` inside ``depth`` lists."""
    for _ in range(depth):
        inner = [inner]
    return inner


def holding_itself() -> list[Any]:
    """A list that holds itself: nested without end."""
    loop: list[Any] = []
    loop.append(loop)
    return loop
