"""Every branch on the database vendor at run time lives in ``django_sqlqueue/db/engines/``:
a scan of the package's syntax trees finds none elsewhere, but in the places allowed
below, each with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import django_sqlqueue

PACKAGE = Path(django_sqlqueue.__file__).parent

#: Outside ``db/engines/``, these may name the vendor, each for its reason.
ALLOWED = {
    "db/engines": "one engine per database: what differs between them, and nothing else",
    "db/schema": "the tables and indexes as the migrations build them, through Django's schema editor, per database",
    "migrations": "a migration is frozen history: it keeps the vendor branches it was written with",
    "bench/dialects.py": "the benchmark's raw SQL, each database's through its bare driver, chosen in one place",
}


def vendor_branches(source: str) -> list[int]:
    """The lines of ``source`` that read a connection's ``vendor``, ``features`` or
    ``mysql_is_mariadb`` other than to print them (inside an f-string), or take a
    parameter named ``vendor``."""
    tree = ast.parse(source)
    printed = {
        id(node)
        for formatted in ast.walk(tree)
        if isinstance(formatted, ast.FormattedValue)
        for node in ast.walk(formatted.value)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in printed:
            continue
        if (
            (isinstance(node, ast.Attribute) and node.attr in {"vendor", "features", "mysql_is_mariadb"})
            or (isinstance(node, ast.Name) and node.id == "vendor")
            or (isinstance(node, ast.arg) and node.arg == "vendor")
        ):
            found.append(node.lineno)
    return sorted(set(found))


def allowed(relative: Path) -> bool:
    return any(relative.as_posix() == place or relative.is_relative_to(place) for place in ALLOWED)


def test_no_vendor_branch_outside_the_engines() -> None:
    outside = {
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in PACKAGE.rglob("*.py")
        if not allowed(path.relative_to(PACKAGE))
        for line in vendor_branches(path.read_text())
    }
    assert sorted(outside) == []


def test_the_scan_finds_a_branch_and_lets_a_printed_vendor_be() -> None:
    source = (
        "def f(connection, vendor):\n"
        "    if connection.vendor == 'postgresql':\n"
        "        pass\n"
        "    hint = HINTS[connections['default'].vendor]\n"
        "    skip = connection.features.has_select_for_update_skip_locked\n"
        "    maria = connection.mysql_is_mariadb\n"
        "    return f'database {connection.vendor}'\n"
    )
    assert vendor_branches(source) == [1, 2, 4, 5, 6]


def test_every_allowed_module_exists() -> None:
    assert all((PACKAGE / name).exists() for name in ALLOWED)
