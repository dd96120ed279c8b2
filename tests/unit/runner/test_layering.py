"""The runner depends on no adapter above it: it never imports the Django Tasks backend
(``django_sqlqueue.backends``), whose tasks it runs through the task's own backend."""

from __future__ import annotations

import ast
import pathlib

import django_sqlqueue.runner

RUNNER = pathlib.Path(django_sqlqueue.runner.__file__).parent


def imported_modules(path: pathlib.Path) -> set[str]:
    """Every module ``path`` imports, at any depth of its code (a function's imports too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_runner_module_imports_the_tasks_backend() -> None:
    modules = sorted(RUNNER.rglob("*.py"))
    assert len(modules) > 5
    importing = {
        path.name
        for path in modules
        for name in imported_modules(path)
        if name == "django_sqlqueue.backends" or name.startswith("django_sqlqueue.backends.")
    }
    assert not importing, f"runner/ modules import django_sqlqueue.backends: {sorted(importing)}"


def test_the_scan_sees_an_import_inside_a_function(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from django_sqlqueue.backends import job_result\n")
    assert "django_sqlqueue.backends" in imported_modules(module)
    module.write_text("from django_sqlqueue import backends\n")
    assert "django_sqlqueue.backends" in imported_modules(module)
