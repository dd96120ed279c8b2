"""Wrappers a test puts in place of a function to see how it is called."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def counting(method: Callable[..., Any], made: list[Any]) -> Callable[..., Any]:
    """``method`` (an ``__init__``, or what makes something), appending the arguments
    of each call to ``made``."""

    def counted(self: Any, *args: Any) -> Any:
        made.append(args)
        return method(self, *args)

    return counted
