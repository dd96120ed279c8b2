"""Wrappers a test puts in place of a function to see how it is called."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def counting(init: Callable[..., None], made: list[Any]) -> Callable[..., None]:
    """``init`` (an ``__init__``), appending the arguments of each call to ``made``."""

    def counted(self: Any, *args: Any) -> None:
        made.append(args)
        init(self, *args)

    return counted
