"""What the test suite runs, read from tox.ini's ``env_list``: the one place the docs
(the ``{{ tested_with }}`` substitution, set in conf.py) and the README's support table
(checked by ``tests/docs/test_tested_with.py``) take their versions from.

An environment such as ``py313-dj61-postgres`` is Python 3.13 with Django 6.1 on
PostgreSQL; ``lint``, ``type``, ``docs`` and ``hosts`` test no combination."""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass
from pathlib import Path

#: Each database factor of tox.ini, and the server the CI machine runs it on (Debian 12's).
DATABASES = {"sqlite": "SQLite 3.40", "postgres": "PostgreSQL 15", "mysql": "MariaDB 10.11"}
BRACES = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Combination:
    """One Python, one Django, one database: what a tox test environment runs."""

    python: str
    django: str
    database: str


def expand(name: str) -> list[str]:
    """tox's brace expansion: ``py3{12,13}-dj61`` is ``py312-dj61`` and ``py313-dj61``."""
    match = BRACES.search(name)
    if match is None:
        return [name]
    return [
        expanded
        for choice in match[1].split(",")
        for expanded in expand(name[: match.start()] + choice.strip() + name[match.end() :])
    ]


def combinations(tox_ini: Path) -> list[Combination]:
    """The combinations of tox.ini's ``env_list``, in its order, each once."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(tox_ini, encoding="utf-8")
    found: list[Combination] = []
    for line in parser["tox"]["env_list"].split():
        for name in expand(line):
            factors = name.split("-")
            python = next((f for f in factors if re.fullmatch(r"py3\d+", f)), None)
            django = next((f for f in factors if re.fullmatch(r"dj\d+", f)), None)
            database = next((f for f in factors if f in DATABASES), None)
            if python and django and database:
                combination = Combination(f"3.{python[3:]}", f"{django[2]}.{django[3:]}", DATABASES[database])
                if combination not in found:
                    found.append(combination)
    return found


def sentence(found: list[Combination]) -> str:
    """``Python 3.13 with Django 6.1 on SQLite 3.40 and PostgreSQL 15; ...``."""
    groups: dict[tuple[str, str], list[str]] = {}
    for combination in found:
        groups.setdefault((combination.python, combination.django), []).append(combination.database)
    return "; ".join(
        f"Python {python} with Django {django} on {and_list(databases)}"
        for (python, django), databases in groups.items()
    )


def and_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
