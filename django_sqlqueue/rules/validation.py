"""The rules a job must meet before it is written: plain JSON arguments and
options in range. Each function returns the problem in words, or None, so that the
decorator, ``enqueue`` and the system checks can all say exactly what is wrong.

One set of rules for every database: a job accepted on SQLite in development must
not be refused, or changed, by PostgreSQL or MariaDB in production. So a value is
accepted only when all three store it and give it back as itself."""

from __future__ import annotations

import datetime
import inspect
import math
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from django_sqlqueue.conf import MAX_CLAIM_LIMIT, conf
from django_sqlqueue.rules.limits import (
    MAX_ATTEMPTS,
    MAX_PRIORITY,
    MAX_SNOOZES,
    MIN_PRIORITY,
    UNIQUE_KEY_MAX_LENGTH,
)
from django_sqlqueue.rules.queues import queue_name_problem, unlisted_queues_problem

#: The longest delay: the database's clock plus this stays before the year 9999 while
#: that clock reads a year before 8999, whatever the database and however it rounds.
MAX_DELAY = datetime.timedelta(days=1000 * 365)
#: What ``enqueue`` does when an active job already holds the new job's ``unique_key``.
ON_CONFLICT = ("skip", "replace", "raise")
#: How long a job holds its ``unique_key``: while it is ready or running, or until it is pruned.
UNIQUE_UNTIL = ("finished", "pruned")

#: MariaDB's ``JSON_VALID`` (the check on its JSON columns) refuses a document nested
#: 32 arrays and objects deep (its ``JSON_DEPTH_LIMIT``); PostgreSQL and SQLite go deeper.
MAX_JSON_DEPTH = 31
#: Integers SQLite's JSON functions and MySQL's JSON type read as themselves; past
#: 64 bits they become floats.
MIN_JSON_INT = -(2**63)
MAX_JSON_INT = 2**63 - 1
#: PostgreSQL's ``jsonb`` writes a float from 1e16 up (which Python writes as ``1e+16``)
#: as digits without a point, which come back as an int.
FLOAT_EXACT_BELOW = 1e16
#: NUL, which PostgreSQL cannot store in ``jsonb`` or text, and surrogates, which are
#: not characters: PostgreSQL and MariaDB refuse a lone one, JSON joins a pair into one.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

_NOT_JSON = "which is not JSON: pass only None, bool, int, float, str, list and dict"


def text_problem(text: str) -> str | None:
    """Why the string ``text`` cannot be stored as itself, or None."""
    if text.isascii() and "\x00" not in text:  # the usual case, without a regular expression
        return None
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "holds the character NUL (\\x00), which PostgreSQL cannot store"
    return f"holds the surrogate {found.group()!r}, which is not a character: decode text with errors='strict'"


def _scalar_problem(value: Any) -> str | None:
    """Why a value that is not a list, tuple or dict is not stored as itself ("is …" or
    "holds …"), or None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, int):
        if MIN_JSON_INT <= value <= MAX_JSON_INT:
            return None
        # Not its digits: an int this long may be past Python's int-to-string limit.
        return (
            f"is an integer of {value.bit_length()} bits, past the 64-bit range that every database's JSON "
            "stores exactly: pass it as a string"
        )
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"is {value!r}, which JSON cannot represent"
        if abs(value) >= FLOAT_EXACT_BELOW:
            return f"is {value!r}, a float PostgreSQL would give back as an int: pass an int or a string"
        if value == 0 and math.copysign(1, value) < 0:
            return "is -0.0, which PostgreSQL would give back as 0.0"
        return None
    kind = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    return f"is {_a(kind)}, {_NOT_JSON}"


#: Starts written with a vowel but spoken with a consonant ("a uuid.UUID", "a one-off"),
#: and the reverse ("an hour").
_SPOKEN_CONSONANT = ("uu", "uni", "usa", "use", "usu", "uti", "url", "eu", "one", "once")
_SPOKEN_VOWEL = ("hour", "honest", "honor", "honour", "heir")


def _a(noun: str) -> str:
    """``noun`` after the article it is spoken with: an object, an int, a set, a uuid.UUID, an hour."""
    start = noun.lower()
    vowel = start[:1] in ("a", "e", "i", "o", "u") and not start.startswith(_SPOKEN_CONSONANT)
    return f"an {noun}" if vowel or start.startswith(_SPOKEN_VOWEL) else f"a {noun}"


def _shown(value: Any) -> str:
    try:
        return repr(value)
    except ValueError:  # an int past Python's int-to-string limit
        return f"an int of {value.bit_length()} bits"


class _Found:
    """A problem, and the keys from the value walked down to the part that has it
    (innermost first: each level adds its own on the way back)."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        self.keys: list[Any] = []

    def at(self, where: str) -> str:
        return where + "".join(f"[{key!r}]" for key in reversed(self.keys)) + " " + self.problem


def json_problem(value: Any, where: str) -> str | None:
    """Why ``value`` would not come back from every database's JSON as itself, or None;
    the problem names the path to the first bad part, e.g. ``args[2]['items'][0]``.

    A tuple is allowed (it comes back as a list, as every Python JSON user expects);
    refused are: dict keys that are not strings, NaN and infinities, integers past
    64 bits, floats of 1e16 and more and -0.0, NUL and surrogates in strings and keys,
    nesting deeper than :data:`MAX_JSON_DEPTH`, and anything but None, bool, int,
    float, str, list, tuple and dict. The walk recurses at most :data:`MAX_JSON_DEPTH`
    levels, so no value raises ``RecursionError``, not even one that holds itself."""
    found = _walk(value, 1)
    return None if found is None else found.at(where)


def _walk(value: Any, depth: int) -> _Found | None:
    if not isinstance(value, (list, tuple, dict)):
        problem = _scalar_problem(value)
        return None if problem is None else _Found(problem)
    if depth > MAX_JSON_DEPTH:
        return _Found(f"is nested deeper than {MAX_JSON_DEPTH} lists and dicts, which MariaDB refuses")
    is_dict = isinstance(value, dict)
    parts: Iterable[tuple[Any, Any]] = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in parts:
        if is_dict and (problem := _key_problem(key)):
            return _Found(problem)
        # The usual parts pass here, without a call: this is on every enqueue's path.
        kind = type(item)
        if kind is str:
            if item.isascii() and "\x00" not in item:
                continue
        elif kind is int:
            if MIN_JSON_INT <= item <= MAX_JSON_INT:
                continue
        elif kind is float:
            if -FLOAT_EXACT_BELOW < item < FLOAT_EXACT_BELOW and (item or math.copysign(1, item) > 0):
                continue
        elif item is None or kind is bool:
            continue
        if found := _walk(item, depth + 1):
            found.keys.append(key)
            return found
    return None


def _key_problem(key: Any) -> str | None:
    if type(key) is str and key.isascii() and "\x00" not in key:
        return None
    if not isinstance(key, str):
        return f"has the key {_shown(key)}: JSON object keys must be strings"
    problem = text_problem(key)
    return None if problem is None else f"has the key {key!r}, which {problem}"


def job_options_problem(
    *,
    queue: Any = None,
    priority: Any = None,
    max_attempts: Any = None,
    timeout: Any = None,
    max_snoozes: Any = None,
    expires_in: Any = None,
) -> str | None:
    """Why these job options are out of their columns' range, or None; ``None`` values are not checked."""
    if expires_in is not None and (problem := delay_problem(expires_in, name="expires_in", positive=True)):
        return problem
    if queue is not None:
        if problem := queue_name_problem(queue):
            return problem
        if problem := text_problem(queue):
            return f"queue name {queue!r} {problem}"
        if problem := unlisted_queues_problem([queue], conf.SQLQUEUE_QUEUES):
            return problem
    if priority is not None and not _int_in(priority, MIN_PRIORITY, MAX_PRIORITY):
        return f"priority must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}, not {_shown(priority)}"
    if max_attempts is not None and not _int_in(max_attempts, 1, MAX_ATTEMPTS):
        return f"max_attempts must be an integer from 1 to {MAX_ATTEMPTS}, not {_shown(max_attempts)}"
    if timeout is not None and (
        # An int past the largest float is below infinity, but no float column holds it.
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= sys.float_info.max
    ):
        return f"timeout must be a positive number of seconds or None, not {_shown(timeout)}"
    if max_snoozes is not None and not _int_in(max_snoozes, 0, MAX_SNOOZES):
        return f"max_snoozes must be an integer from 0 to {MAX_SNOOZES}, not {_shown(max_snoozes)}"
    return None


def _int_in(value: Any, lowest: int, highest: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lowest <= value <= highest


def claim_limit_problem(limit: Any) -> str | None:
    """Why ``limit`` cannot be how many jobs one claim takes, or None."""
    if _int_in(limit, 1, MAX_CLAIM_LIMIT):
        return None
    return f"limit must be an integer from 1 to {MAX_CLAIM_LIMIT}, not {_shown(limit)}"


def arguments_problem(args: Any, kwargs: Any) -> str | None:
    """Why these call arguments cannot be stored, or None."""
    if not isinstance(args, (list, tuple)):
        return f"args must be a list or tuple, not {type(args).__name__}"
    if not isinstance(kwargs, dict):
        return f"kwargs must be a dict, not {type(kwargs).__name__}"
    if not args and not kwargs:  # no arguments, as many jobs have: nothing to walk
        return None
    return json_problem(args, "args") or json_problem(kwargs, "kwargs")


def meta_problem(meta: Any) -> str | None:
    """Why ``meta`` cannot be a job's ``meta``, or None: None (none), or a dict whose
    values are JSON, as arguments are (:func:`json_problem`)."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        return f"meta must be a dict, not {type(meta).__name__}"
    return json_problem(meta, "meta")


def unique_key_problem(key: Any) -> str | None:
    """Why ``key`` cannot be a job's ``unique_key``, or None (None is no key)."""
    if key is None:
        return None
    if not isinstance(key, str) or not 0 < len(key) <= UNIQUE_KEY_MAX_LENGTH:
        return f"unique_key must be a string of 1 to {UNIQUE_KEY_MAX_LENGTH} characters or None, not {_shown(key)}"
    problem = text_problem(key)
    return None if problem is None else f"unique_key {key!r} {problem}"


def unique_until_problem(until: Any) -> str | None:
    """Why ``until`` cannot say how long a job holds its key, or None (None is the default)."""
    if until is None or until in UNIQUE_UNTIL:
        return None
    return f"unique_until must be one of {', '.join(map(repr, UNIQUE_UNTIL))}, not {_shown(until)}"


def run_at_problem(run_at: Any, *, use_tz: bool, name: str = "run_at") -> str | None:
    """Why ``run_at`` cannot be a job's first run time (or its ``name``, such as
    ``expires_at``), or None: it must be a datetime, aware under ``USE_TZ`` (any offset)
    and naive without, between the years 1 and 9999 in UTC, which every database stores
    and Python reads back."""
    if not isinstance(run_at, datetime.datetime):
        return f"{name} must be a datetime, not {type(run_at).__name__}"
    aware = run_at.utcoffset() is not None
    if use_tz and not aware:
        return (
            f"{name} {run_at.isoformat()} is naive but USE_TZ is on: say which time zone it is in, "
            "e.g. with django.utils.timezone.make_aware()"
        )
    if not use_tz and aware:
        return f"{name} {run_at.isoformat()} has a time zone but USE_TZ is off: pass a naive local time"
    if aware:
        try:
            run_at.astimezone(datetime.timezone.utc)
        except OverflowError:
            return f"{name} {run_at.isoformat()} is outside the years 1 to 9999 in UTC"
    return None


def delay_problem(delay: Any, *, name: str = "delay", positive: bool = False) -> str | None:
    """Why ``delay`` (a timedelta or seconds) cannot delay a job (or be its ``name``,
    such as ``expires_in``, which must be ``positive``), or None: up to
    :data:`MAX_DELAY`, so the database's now plus the delay is a time it can store."""
    bounds: tuple[Any, Any] | None = None
    if isinstance(delay, datetime.timedelta):
        bounds = datetime.timedelta(0), MAX_DELAY
    elif isinstance(delay, (int, float)) and not isinstance(delay, bool):
        bounds = 0, MAX_DELAY.total_seconds()
    if bounds is not None and (delay > bounds[0] or (not positive and delay == bounds[0])) and delay <= bounds[1]:
        return None
    least = "more than 0 seconds" if positive else "from 0"
    return f"{name} must be a timedelta or a number of seconds {least} to {MAX_DELAY.days} days, not {_shown(delay)}"


def expiry_problem(*, expires_at: Any, expires_in: Any, run_at: Any, delay: Any, use_tz: bool) -> str | None:
    """Why a job cannot expire as asked, or None: ``expires_at`` (a time) or
    ``expires_in`` (seconds or a timedelta after the enqueue, by the database's clock),
    not both, after the job's first run time (``run_at``, or ``delay`` after the
    enqueue). An absolute time is compared with a delay on this process's clock: the
    check catches a deadline given before the start it was meant to follow; the
    database's clock decides the expiry itself."""
    if expires_at is not None and expires_in is not None:
        return "pass expires_at or expires_in, not both"
    if expires_at is not None:
        if problem := run_at_problem(expires_at, use_tz=use_tz, name="expires_at"):
            return problem
    elif expires_in is not None:
        if problem := delay_problem(expires_in, name="expires_in", positive=True):
            return problem
    else:
        return None
    now = datetime.datetime.now(datetime.timezone.utc if use_tz else None)
    start = run_at if run_at is not None else None if delay is None else now + _timedelta(delay)
    end = expires_at if expires_at is not None else now + _timedelta(expires_in)
    if start is not None and end <= start:
        return f"the job would expire ({end.isoformat()}) before it may first run ({start.isoformat()})"
    return None


def _timedelta(delay: datetime.timedelta | float) -> datetime.timedelta:
    return delay if isinstance(delay, datetime.timedelta) else datetime.timedelta(seconds=delay)


#: The most jobs one concurrency key may run at once.
MAX_CONCURRENCY_LIMIT = 1_000_000


def concurrency_problem(key: Any, limit: Any) -> str | None:
    """Why a job's concurrency key and limit cannot be stored, or None (neither set is fine)."""
    if key is None:
        return None if limit is None else "concurrency_limit needs a concurrency_key"
    if not isinstance(key, str) or not key or len(key) > 255 or text_problem(key):
        return f"concurrency_key must be a non-empty string of at most 255 characters, not {_shown(key)}"
    if not _int_in(limit, 1, MAX_CONCURRENCY_LIMIT):
        return f"concurrency_limit must be an integer from 1 to {MAX_CONCURRENCY_LIMIT}, not {_shown(limit)}"
    return None


#: MySQL/MariaDB character sets, by their names there, that hold every character.
_EVERY_CHARACTER = frozenset({"utf8mb4", "utf16", "utf16le", "utf32", "binary"})
#: Those that hold the Basic Multilingual Plane only (no emoji, no rarer CJK).
_BMP_ONLY = frozenset({"utf8mb3", "utf8", "ucs2"})
#: MySQL's ``latin1`` is Windows-1252 with its five undefined bytes read as the C1
#: controls of the same numbers, not ISO 8859-1 (Python's ``latin-1``).
_LATIN1_CONTROLS = frozenset("\x81\x8d\x8f\x90\x9d")


def concurrency_names_problem(func: Any, names: Sequence[str] | None, limit: Any) -> str | None:
    """Why ``@job(concurrency=names, concurrency_limit=limit)`` cannot derive keys, or None."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(name, str) for name in names):
        return f"concurrency must be a tuple of argument names, not {names!r}"
    if limit is None:
        return "concurrency needs a concurrency_limit"
    parameters = inspect.signature(func).parameters
    if unknown := [name for name in names if name not in parameters]:
        return f"concurrency names {unknown}, which are not arguments of the function"
    return None


def charset_problem(text: str, charset: str) -> str | None:
    """Why a MySQL/MariaDB column or connection in the character set ``charset`` would
    not store ``text`` as itself (it refuses it in strict mode and writes ``?`` for it
    otherwise), or None. A character set Python has no codec of the same name for is
    taken to hold ASCII alone."""
    if text.isascii() or charset in _EVERY_CHARACTER:
        return None
    for char in text:
        if not _holds(charset, char):
            return f"holds {char!r} (U+{ord(char):04X}), which the character set {charset} cannot store"
    return None


def _holds(charset: str, char: str) -> bool:
    if char.isascii():
        return True
    if charset in _BMP_ONLY:
        return ord(char) <= 0xFFFF
    if charset == "latin1" and char in _LATIN1_CONTROLS:
        return True
    try:
        char.encode("cp1252" if charset == "latin1" else charset)
    except (LookupError, UnicodeEncodeError):
        return False
    return True
