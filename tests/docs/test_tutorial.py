"""The tutorial's project (``docs/tutorial/project/``, whose files the tutorial includes)
built and run as the tutorial says: migrate, check, orders through the view,
``runworkers``, a failure retried from the admin. On SQLite as the tutorial starts; on
PostgreSQL and MariaDB with its next step's settings module, on the test's database."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.db import connection

from tests.support.projects import Project, assert_orders_run, place_orders
from tests.support.workers import ROOT

pytestmark = pytest.mark.processes

TUTORIAL = ROOT / "docs" / "tutorial" / "project"
PAGE = TUTORIAL.parent / "first-jobs.md"

#: The tutorial's settings module for each database the suite runs on.
NEXT_STEP = {"postgresql": "mysite.postgres", "mysql": "mysite.mysql"}


@pytest.fixture
def project(transactional_db: None, tmp_path: Path) -> Project:
    """A copy of the tutorial's project. Off SQLite, its next step's settings module with
    the server's address, user and database swapped for the test's (migrated already)."""
    folder = tmp_path / "project"
    shutil.copytree(TUTORIAL, folder, ignore=shutil.ignore_patterns("db.sqlite3*", "__pycache__"))
    if connection.vendor == "sqlite":
        return Project(folder)
    ours = connection.settings_dict
    address = {key: ours[key] for key in ("NAME", "HOST", "PORT", "USER", "PASSWORD")}
    (folder / "mysite" / "under_test.py").write_text(
        f"from {NEXT_STEP[connection.vendor]} import *  # noqa: F403\n\nDATABASES['default'].update({address!r})\n"
    )
    return Project(folder, "mysite.under_test")


def type_the_shell_session(project: Project) -> None:
    """The tutorial's own ``manage.py shell`` session places the orders: its job ids
    are those of a new database, so on SQLite only (the others run on the test's)."""
    typed = project.visit("session", str(PAGE))
    assert (typed["blocks"], typed["attempted"], typed["failed"]) == (1, 4, 0), typed["report"]


@pytest.mark.slow
def test_the_tutorial_project_runs_its_orders_and_retries_a_failure(project: Project) -> None:
    project.manage("migrate")
    place = type_the_shell_session if connection.vendor == "sqlite" else place_orders
    assert_orders_run(project, ("python", "manage.py", "runworkers"), place)


def test_the_next_step_settings_name_their_database() -> None:
    """What the tutorial shows for PostgreSQL and MariaDB is the engine the test above runs."""
    for vendor, module in NEXT_STEP.items():
        text = (TUTORIAL / Path(*module.split("."))).with_suffix(".py").read_text()
        assert "from mysite.settings import *" in text
        assert f"django.db.backends.{vendor}" in text
