"""Rate limits as ``SQLQUEUE_RATE_LIMITS`` spells them: ``"25/s"``, ``"100/m"``,
``"1000/h"``, optionally with a burst: ``"25/s burst 50"``."""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from django_sqlqueue.rules.limits import RATE_LIMIT_NAME_MAX_LENGTH

_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*/\s*([smh])(?:\s+burst\s+(\d+))?\s*")
_SECONDS = {"s": 1, "m": 60, "h": 3600}


class Rate(NamedTuple):
    """A token bucket: ``per_second`` tokens flow in, at most ``burst`` wait in it."""

    per_second: float
    burst: int


def parse_rate(name: object, text: object) -> Rate:
    """The rate ``text`` means; raises ``ValueError`` saying what is wrong.

    The burst defaults to one second of the rate, and is at least 1: at most
    ``burst + per_second * t`` jobs start in any ``t`` seconds."""
    if not isinstance(name, str) or not 0 < len(name) <= RATE_LIMIT_NAME_MAX_LENGTH:
        raise ValueError(
            f"a rate limit's name must be a string of 1 to {RATE_LIMIT_NAME_MAX_LENGTH} characters, not {name!r}"
        )
    found = _RATE.fullmatch(text) if isinstance(text, str) else None
    if found is None or float(found[1]) <= 0:
        raise ValueError(f"rate limit {name!r} must read like '25/s', '100/m' or '1000/h burst 5', not {text!r}")
    per_second = float(found[1]) / _SECONDS[found[2]]
    burst = int(found[3]) if found[3] else max(1, math.ceil(per_second))
    if burst < 1:
        raise ValueError(f"rate limit {name!r} needs a burst of at least 1, not {burst}")
    return Rate(per_second, burst)


def rate_limit_name_problem(name: object) -> str | None:
    """Why ``@job(rate_limit=name)`` cannot name a rate limit, or None (None is no limit)."""
    if name is None or (isinstance(name, str) and 0 < len(name) <= RATE_LIMIT_NAME_MAX_LENGTH):
        return None
    return f"rate_limit must name an entry of SQLQUEUE_RATE_LIMITS, not {name!r}"
