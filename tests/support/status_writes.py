"""The statements that write a job's status, checked against the transitions of
``rules/lifecycle.py``: an execute wrapper (:class:`StatusWrites`) reads each ``INSERT``
and ``UPDATE`` of the jobs table that sets ``status``, the statuses it writes and those
its ``WHERE`` moves them from, and keeps every pair no transition declares.

Only the library's statements are checked: a test that writes a row straight into a
status to set up its case (``Job.objects.create(status=...)``) makes no transition.
Statements run by worker processes a test starts are not seen here; the unit test of
``db/lifecycle.py`` runs the same functions in its own process."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import django_sqlqueue
from django_sqlqueue.rules.lifecycle import ENQUEUE, TRANSITIONS, JobStatus

#: Where the package was imported from: the checkout, or a virtualenv's site-packages
#: where tox installs its wheel; a frame's file names it as imported.
_PACKAGE = os.path.join(os.path.dirname(django_sqlqueue.__file__), "")
_TESTS = str(Path(__file__).resolve().parents[1])
_STATUSES = frozenset(status.value for status in JobStatus)
#: The pairs (from, to) the table declares; a new row comes from None.
DECLARED = frozenset(
    (source, transition.target.value)
    for transition in TRANSITIONS.values()
    if transition.target is not None and "status" in transition.writes
    for source in ([status.value for status in transition.sources] if transition.sources else [None])
)
#: A new row made in two statements of one transaction (``written(..., over=ENQUEUE)``):
#: inserted as ``enqueue``, then given its own transition's status.
DECLARED |= {
    (ENQUEUE.status.value, transition.status.value)
    for transition in TRANSITIONS.values()
    if not transition.sources and transition is not ENQUEUE
}
#: The statuses some transition writes, for a statement whose WHERE names no status.
_WRITTEN = frozenset(target for _, target in DECLARED)
#: How much of an INSERT is read: its columns and its first row.
_FIRST_ROW = 2000
#: A status literal, as the rendered statement holds it.
_LITERAL = re.compile(r"'(\w+)'")
#: ``status = 'X'`` or ``status IN ('X', 'Y')`` in a WHERE (not after NOT).
_SOURCE = re.compile(r"(?<!NOT \()[`\"]?status[`\"]?\s*(?:=\s*('\w+')|IN\s*\(((?:'\w+'(?:,\s*)?)+)\))")


class StatusWrites:
    """An execute wrapper keeping the status writes no transition declares."""

    def __init__(self, table: str) -> None:
        self.table = table
        #: Every (from, to) pair seen, with a statement that made it.
        self.seen: dict[tuple[str | None, str], str] = {}

    def undeclared(self) -> dict[tuple[str | None, str], str]:
        """The pairs seen that no transition declares (from ``*``: any source)."""
        return {pair: sql for pair, sql in self.seen.items() if not declared(*pair)}

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        head = sql[:80].lstrip().upper()
        if head.startswith(("UPDATE", "INSERT")) and self.table in sql[:80] and "status" in sql and _by_library():
            for pair in pairs(sql, params if not many else None):
                self.seen.setdefault(pair, sql)
        return execute(sql, params, many, context)


def declared(source: str | None, target: str) -> bool:
    """Whether a transition moves ``source`` (``*``: a status the WHERE did not name) to ``target``."""
    return (source, target) in DECLARED or (source == "*" and target in _WRITTEN)


def _by_library() -> bool:
    """Whether the statement comes from the package (not a test setting up its rows)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_PACKAGE):
            return True
        if name.startswith(_TESTS) and not name.endswith("status_writes.py"):
            return False
        frame = frame.f_back  # type: ignore[assignment]
    return False


def pairs(sql: str, params: Sequence[Any] | None) -> set[tuple[str | None, str]]:
    """The (from, to) pairs of statuses the statement ``sql`` writes: every status it
    sets, from the statuses its WHERE names that a transition moves there, or from all
    of them when none does (None for a new row; ``*`` for a WHERE that names none, where
    only the status written is checked)."""
    if sql.lstrip().upper().startswith("INSERT"):
        # Every row of a new job starts in the same status: the first row says it.
        first = sql[:_FIRST_ROW]
        text = _rendered(first, params[: first.count("%s")] if isinstance(params, (list, tuple)) else params)
        return {(None, status) for status in _statuses(text.split(")", 1)[1])}
    text = _rendered(sql, params)
    setting, where = _set_and_where(text)
    targets: set[str] = set()
    for assignment in _top_level(setting, ","):
        column, _, value = assignment.partition("=")
        if column.strip().strip('`"').split('"."')[-1].strip('`"') == "status":
            targets |= _statuses(value)
    sources = {status for match in _SOURCE.finditer(where) for status in _statuses("".join(match.groups("")))}
    # A status the WHERE names may be a subquery's (the claim's candidates, a concurrency
    # count): a target is declared when some status named moves to it.
    found: set[tuple[str | None, str]] = set()
    for target in targets:
        fitting = {source for source in sources if (source, target) in DECLARED}
        found |= {(source, target) for source in (fitting or sources or {"*"})}
    return found


def _statuses(text: str) -> set[str]:
    return {value for value in _LITERAL.findall(text) if value in _STATUSES}


def _rendered(sql: str, params: Sequence[Any] | None) -> str:
    """``sql`` with each string parameter written in as a literal (the others as ``?``)."""
    if not params or isinstance(params, dict):
        return sql
    pieces = sql.split("%s")
    values = [f"'{value}'" if isinstance(value, str) else "?" for value in params[: len(pieces) - 1]]
    if len(values) != len(pieces) - 1:
        return sql
    return "".join(piece + value for piece, value in zip(pieces, [*values, ""], strict=True))


def _set_and_where(text: str) -> tuple[str, str]:
    """The SET list and the WHERE of an UPDATE, split at the top-level WHERE."""
    after_set = text.split(" SET ", 1)[1]
    parts = _top_level(after_set, " WHERE ")
    return parts[0], " WHERE ".join(parts[1:])


def _top_level(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside parentheses and quotes."""
    parts, depth, quoted, start, index = [], 0, False, 0, 0
    while index < len(text):
        char = text[index]
        if char == "'":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif not quoted and depth == 0 and text.startswith(separator, index):
            parts.append(text[start:index])
            start = index = index + len(separator)
            continue
        index += 1
    parts.append(text[start:])
    return parts
