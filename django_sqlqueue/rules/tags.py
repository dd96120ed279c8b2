"""The rules of a job's tags: short names from a small alphabet, a few per job, so that
a tag reads the same in a URL, a log line and every database's index."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django_sqlqueue.rules.limits import MAX_TAGS, TAG_MAX_LENGTH

#: Letters, digits and ``_ . : / = @ -``: ``tenant:42``, ``import``, ``env=prod``.
TAG_PATTERN = re.compile(r"[A-Za-z0-9_.:/=@-]+")


def tag_problem(tag: Any) -> str | None:
    """Why ``tag`` cannot be a tag, or None."""
    if not isinstance(tag, str):
        return f"a tag must be a string, not {type(tag).__name__}"
    if not 0 < len(tag) <= TAG_MAX_LENGTH:
        return f"tag {tag[:TAG_MAX_LENGTH]!r}… is not 1 to {TAG_MAX_LENGTH} characters long"
    if not TAG_PATTERN.fullmatch(tag):
        return f"tag {tag!r} holds characters other than letters, digits and _ . : / = @ -"
    return None


def tags_problem(tags: Any) -> str | None:
    """Why ``tags`` cannot be a job's tags, or None: a list (or tuple) of at most
    :data:`MAX_TAGS` tags, each as :func:`tag_problem` says."""
    if isinstance(tags, str) or not isinstance(tags, (list, tuple, set, frozenset)):
        return f"tags must be a list of strings, not {type(tags).__name__}"
    if len(tags) > MAX_TAGS:
        return f"a job may have at most {MAX_TAGS} tags, not {len(tags)}"
    for tag in tags:
        if problem := tag_problem(tag):
            return problem
    return None


def merged(*groups: Iterable[str] | None) -> tuple[str, ...]:
    """The tags of ``groups`` (the task's, then the enqueue's), each once, in order."""
    if not any(groups):  # most jobs have none: every job built asks
        return ()
    return tuple(dict.fromkeys(tag for group in groups if group for tag in group))
