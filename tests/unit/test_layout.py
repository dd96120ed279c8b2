"""``docs/explanation/layout.md`` names every subpackage of ``django_sqlqueue``: a
folder added to the code and not to the page fails here. And no module imports, even
for a type only, a module that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

import django_sqlqueue

PACKAGE = Path(django_sqlqueue.__file__).parent
PAGE = Path(__file__).resolve().parents[2] / "docs" / "explanation" / "layout.md"
#: Django's own folders, which hold no code of a layer.
NOT_LAYERS = {"migrations", "templates"}


def subpackages() -> list[str]:
    """Every subpackage, as a path under the package (``db/keys``), read from the files:
    importing them would need settings."""
    folders = (init.parent.relative_to(PACKAGE) for init in PACKAGE.rglob("__init__.py"))
    return sorted(folder.as_posix() for folder in folders if folder.parts and folder.parts[0] not in NOT_LAYERS)


def test_every_subpackage_is_named_on_the_layout_page() -> None:
    page = PAGE.read_text()
    assert subpackages()  # the walk found the package's folders
    assert [path for path in subpackages() if f"`{path}/" not in page] == []


def imports() -> dict[str, set[str]]:
    """Each module of the package (``django_sqlqueue.db.claiming``) to the modules of the
    package it imports, read from the files: every import, under ``if TYPE_CHECKING:``
    or inside a function too, as a reader follows them."""
    files = {path: path.relative_to(PACKAGE.parent).with_suffix("") for path in PACKAGE.rglob("*.py")}
    names = {path: ".".join(name.parts[:-1] if name.name == "__init__" else name.parts) for path, name in files.items()}
    modules = set(names.values())
    found: dict[str, set[str]] = {}
    for path, name in names.items():
        if "migrations" in path.relative_to(PACKAGE).parts:
            continue
        found[name] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found[name].update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom) and node.module in modules:
                inner = {f"{node.module}.{alias.name}" for alias in node.names} & modules
                found[name].update(inner or {node.module})
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The sets of modules that reach each other through their imports (Tarjan's
    strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph.get(module, ()):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            members = []
            while (member := stack.pop()) != module:
                members.append(member)
            if members:
                found.append(sorted([module, *members]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = imports()
    assert graph["django_sqlqueue.models"] >= {"django_sqlqueue.managers"}  # the walk read the imports
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert circles(graph) == []
