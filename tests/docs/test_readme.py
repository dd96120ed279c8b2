"""The README's Quickstart, block by block, in a fresh ``django-admin startproject``
project in a folder of its own: its settings are Django's defaults plus exactly what the
README says, its files exactly the README's, its commands the README's. Then an order
through its view, ``runworkers`` as the README starts it, and the failure retried from
the admin's failures page. Its files are the tutorial's project's own (one source)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from django.db import connection

from tests.support.projects import Project, assert_orders_run
from tests.support.workers import ROOT

pytestmark = pytest.mark.processes

README = ROOT / "README.md"
TUTORIAL = ROOT / "docs" / "tutorial" / "project"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
#: A Python block's first line names its file, and "add at the end" when it adds to it.
FILE_LINE = re.compile(r"# (?P<path>[\w/]+\.py)(?P<append>: add at the end)?\n")
#: Commands a person runs that the test does itself: the superuser (the visitor makes
#: one) and the server (the test client stands in for the browser).
PERSON = {"createsuperuser", "runserver"}


def quickstart() -> list[tuple[str, str]]:
    """The ``(language, text)`` of each code block of the README's Quickstart, in order."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    return [(match[1], match[2]) for match in BLOCK.finditer(section)]


def follow(project: Project, blocks: list[tuple[str, str]]) -> tuple[str, ...]:
    """Do what the blocks say in ``project``: write and add to its files, run its
    commands; return the ``runworkers`` command line, which the test runs once there
    are orders."""
    runworkers: tuple[str, ...] = ()
    for language, text in blocks:
        if language == "python":
            named = FILE_LINE.match(text)
            assert named, f"a Quickstart Python block names no file:\n{text}"
            path = project.folder / named["path"]
            path.write_text(path.read_text() + "\n" + text if named["append"] else text)
            continue
        assert language == "sh", language
        for line in text.splitlines():
            words = shlex.split(line, comments=True)
            if words[:2] == ["pip", "install"]:
                assert words[2:] == ["-e", "/path/to/django-sqlqueue"]  # installed in this environment
            elif words[:2] == ["python", "manage.py"] and words[2] == "runworkers":
                runworkers = tuple(words)
            elif words[:2] == ["python", "manage.py"] and words[2] not in PERSON:
                project.run(*words)
            else:
                assert words[:2] == ["python", "manage.py"], f"the test cannot run {line!r}"
    return runworkers


def test_the_quickstart_blocks_are_the_tutorial_projects_files() -> None:
    files = [FILE_LINE.match(text) for language, text in quickstart() if language == "python"]
    whole = [(named["path"], named.string[named.end() :]) for named in files if named and not named["append"]]
    assert [path for path, _ in whole] == ["shop/tasks.py", "shop/views.py", "mysite/urls.py"]
    for path, text in whole:
        assert text == (TUTORIAL / path).read_text(), path


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the Quickstart's settings are SQLite's")
@pytest.mark.slow
def test_the_quickstart_runs_in_a_new_project(tmp_path: Path) -> None:
    folder = tmp_path / "mysite"
    folder.mkdir()
    project = Project(folder)
    project.run("python", "-m", "django", "startproject", "mysite", str(folder))
    runworkers = follow(project, quickstart())
    assert runworkers == ("python", "manage.py", "runworkers")
    assert (folder / "db.sqlite3").exists()  # migrated
    assert_orders_run(project, runworkers)
