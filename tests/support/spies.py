"""Wrappers a test puts in place of a function to see how it is called."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from django_sqlqueue.rules import failures


def counting(method: Callable[..., Any], made: list[Any]) -> Callable[..., Any]:
    """``method`` (an ``__init__``, or what makes something), appending the arguments
    of each call to ``made``."""

    def counted(self: Any, *args: Any) -> Any:
        made.append(args)
        return method(self, *args)

    return counted


def tracebacks_formatted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The message of each exception whose traceback ``rules/failures.py`` formats (a
    failed attempt's record) from now on, until the test ends."""
    formatted: list[str] = []

    def format_exception(error: BaseException) -> list[str]:
        formatted.append(str(error))
        return traceback.format_exception(error)

    monkeypatch.setattr(failures, "traceback", SimpleNamespace(format_exception=format_exception))
    return formatted
