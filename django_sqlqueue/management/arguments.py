"""Argument types the app's commands share: argparse calls them, and their
``ArgumentTypeError`` becomes a usage error that names the option."""

from __future__ import annotations

import argparse

from django_sqlqueue.conf import queue_name_problem


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def queue_list(text: str) -> list[str]:
    """Comma-separated queue names, each one a queue may have."""
    queues = [name.strip() for name in text.split(",")]
    for name in queues:
        if problem := queue_name_problem(name):
            raise argparse.ArgumentTypeError(problem)
    return queues
