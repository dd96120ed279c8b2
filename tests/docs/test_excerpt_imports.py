"""The how-to guides' excerpts of the example project show the imports they use
(``docs/_ext/excerpt_imports.py``): a function or a marked part of a file, copied from
the page, names nothing the page does not show where it comes from."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType

from tests.support.workers import ROOT

DOCS = ROOT / "docs"
DIRECTIVE = re.compile(r"^( *)```\{literalinclude\} (\S+\.py)\n((?:\1:[^\n]*\n)*)", re.MULTILINE)


def load() -> ModuleType:
    """``docs/_ext/excerpt_imports.py``, which Sphinx imports from its own path."""
    spec = importlib.util.spec_from_file_location("excerpt_imports", DOCS / "_ext" / "excerpt_imports.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SOURCE = """\
from __future__ import annotations

import time
from collections.abc import Iterable
from django_sqlqueue import current_job, job, workflows

synced: list[int] = []
LIMITS = {"a": time.monotonic()}


@job
def sync(ids: Iterable[int]) -> None:
    current_job()
    synced.extend(ids)
    LIMITS.clear()
"""


def test_an_excerpt_is_given_the_imports_and_plain_values_it_uses() -> None:
    excerpt = SOURCE.split("\n\n\n", 1)[1]
    assert load().needed_lines(SOURCE, excerpt) == [
        "from collections.abc import Iterable",
        "from django_sqlqueue import current_job, job",
        "synced: list[int] = []",
    ]


def excerpts() -> list[tuple[str, Path, dict[str, str]]]:
    """Every ``literalinclude`` of a Python file on a page: the page, the file, its options."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
            options = dict(re.findall(r":([\w-]+):[ ]*(.*)", match[3]))
            found.append((page.name, page.parent / match[2], options))
    return found


def test_every_excerpt_of_the_guides_shows_the_imports_it_uses() -> None:
    """An excerpt left as it is (lines emphasized) must import what it uses itself;
    one that is not statements (the items of a list) is not checked."""
    extension = load()
    assert "excerpt_imports" in (DOCS / "conf.py").read_text(encoding="utf-8")
    checked = 0
    for page, path, options in excerpts():
        if not extension.EXCERPTS & set(options) or ("pyobject" not in options and "start-after" not in options):
            continue
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        if "pyobject" in options:
            [node] = [
                node
                for node in tree.body
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.name == options["pyobject"]
            ]
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            excerpt = "\n".join(source.splitlines()[first - 1 : node.end_lineno])
        else:
            after = source.split(options["start-after"].strip('"'), 1)[1]
            excerpt = after.split(options["end-before"].strip('"'), 1)[0] if "end-before" in options else after
        added = [] if extension.LEFT_AS_IS & set(options) else extension.needed_lines(source, excerpt)
        try:
            shown = ast.parse(textwrap.dedent("\n".join([*added, excerpt])))
        except SyntaxError:  # not statements (items of a list): not an excerpt a reader runs
            continue
        imported = {
            (alias.asname or alias.name).split(".")[0]
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "module", None) != "__future__"
            for alias in node.names
        }
        bound = {
            (alias.asname or alias.name).split(".")[0]
            for node in ast.walk(shown)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        used = {node.id for node in ast.walk(shown) if isinstance(node, ast.Name)}
        assert used & imported <= bound, (page, path.name, options)
        checked += 1
    assert checked > 25
