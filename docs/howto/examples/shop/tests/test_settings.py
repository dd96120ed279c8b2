"""The settings blocks the pages show pass the system checks (``manage.py
check``, with the database checks, on the test database), and the SQLite
settings shown are the ones the test project runs on."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from mysite import sqlite
from testproject.settings import _database


def test_the_sqlite_settings_shown_are_the_tested_ones():
    shown = sqlite.DATABASES["default"]
    tested = _database("sqlite")
    assert (shown["ENGINE"], shown["OPTIONS"]) == (
        tested["ENGINE"],
        tested["OPTIONS"],
    )


def test_the_settings_blocks_pass_the_system_checks(db):
    out = StringIO()
    call_command(
        "check", databases=["default"], fail_level="WARNING", stdout=out
    )
    assert out.getvalue().startswith("System check identified no issues")
