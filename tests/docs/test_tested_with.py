"""The versions the docs say they were tested with come from tox.ini's env_list
(``docs/_ext/tested_with.py``, the ``{{ tested_with }}`` substitution), and the README's
support table says the same."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from tests.support.workers import ROOT

TOX_INI = ROOT / "tox.ini"


def load() -> ModuleType:
    """``docs/_ext/tested_with.py``, which Sphinx imports from its own path."""
    spec = importlib.util.spec_from_file_location("tested_with", ROOT / "docs" / "_ext" / "tested_with.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_env_list_names_every_combination_once(tmp_path: Path) -> None:
    tested_with = load()
    tox_ini = tmp_path / "tox.ini"
    tox_ini.write_text(
        "[tox]\nenv_list =\n    py313-dj61-{sqlite,postgres}\n    py313-dj61-postgres-ssb\n"
        "    py3{10,12}-dj52-mysql\n    lint\n    docs\n"
    )
    found = tested_with.combinations(tox_ini)
    assert [(c.python, c.django, c.database) for c in found] == [
        ("3.13", "6.1", "SQLite 3.40"),
        ("3.13", "6.1", "PostgreSQL 15"),
        ("3.10", "5.2", "MariaDB 10.11"),
        ("3.12", "5.2", "MariaDB 10.11"),
    ]
    assert tested_with.sentence(found) == (
        "Python 3.13 with Django 6.1 on SQLite 3.40 and PostgreSQL 15; "
        "Python 3.10 with Django 5.2 on MariaDB 10.11; Python 3.12 with Django 5.2 on MariaDB 10.11"
    )


def test_the_readme_support_table_says_what_tox_runs() -> None:
    found = load().combinations(TOX_INI)
    rows = dict(re.findall(r"^\| (\w[\w /]*?) \| .*? \| (.*?) \|$", (ROOT / "README.md").read_text(), re.MULTILINE))

    def versions(cell: str) -> set[str]:
        return set(re.findall(r"\d+\.\d+", cell))

    assert versions(rows["Python"]) == {c.python for c in found}
    assert versions(rows["Django"]) == {c.django for c in found}
    cells = {"PostgreSQL": rows["PostgreSQL"], "MariaDB": rows["MySQL / MariaDB"], "SQLite": rows["SQLite"]}
    for combination in found:
        assert combination.database in cells[combination.database.split()[0]]
