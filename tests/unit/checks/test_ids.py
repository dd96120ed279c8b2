from __future__ import annotations

import ast
import re
from pathlib import Path

from django.core import checks

import django_sqlqueue
from django_sqlqueue.checks import ids as check_ids
from django_sqlqueue.checks.ids import CHECK_IDS, SETTING_CHECKS
from django_sqlqueue.conf import setting_names

PACKAGE = Path(django_sqlqueue.__file__).parent


def test_every_id_the_package_names_is_registered() -> None:
    named = {
        match
        for path in PACKAGE.rglob("*.py")
        for match in re.findall(r"sqlqueue\.[EW]\d{3}", path.read_text(encoding="utf-8"))
    }
    assert named <= set(CHECK_IDS)


def test_checks_build_every_message_from_the_registry() -> None:
    """No message in checks is made with an id of its own, so each one's level and id are
    the registry's, and every entry of the registry is one that checks reports."""
    tree = ast.parse((PACKAGE / "checks" / "__init__.py").read_text(encoding="utf-8"))
    own_ids = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == "id"]
    assert own_ids == []
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "check_ids"
    }
    entries = {name for name, value in vars(check_ids).items() if isinstance(value, check_ids.CheckId)}
    assert entries | {"SETTING_CHECKS"} == used


def test_every_setting_has_a_check_id() -> None:
    assert set(SETTING_CHECKS) == set(setting_names())


def test_ids_are_unique_and_levels_match_their_letter() -> None:
    every = [*SETTING_CHECKS.values()] + [v for v in vars(check_ids).values() if isinstance(v, check_ids.CheckId)]
    assert len(CHECK_IDS) == len({check.id for check in every})
    for check in CHECK_IDS.values():
        assert check.level is {"E": checks.Error, "W": checks.Warning}[check.id[len("sqlqueue.")]]
        assert check.reports
        assert check.hint


def test_a_message_takes_the_registry_hint_unless_given_one() -> None:
    assert check_ids.VERSION.message("old.") == checks.Error(
        "old.", hint="Upgrade the database server.", id="sqlqueue.E011"
    )
    assert check_ids.JOURNAL.message("slow.", "use WAL") == checks.Warning("slow.", hint="use WAL", id="sqlqueue.W001")
