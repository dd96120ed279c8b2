"""``docs/howto/recurring.md``: every code block of the page is checked here, so that the
page cannot drift from the code. Its settings are included from a file these tests load
and run the system checks on; its shell commands are run (``manage.py``) or checked
(``pip install`` of an extra that exists)."""

from __future__ import annotations

import datetime
import re
import runpy
import shlex
from io import StringIO
from typing import Any

import pytest
from django.core import checks
from django.core.management import call_command
from django.test import override_settings

from django_sqlqueue.recurrence import wall_time
from tests.support.workers import ROOT

PAGE = ROOT / "docs" / "howto" / "recurring.md"
SETTINGS = PAGE.parent / "examples" / "recurring_settings.py"
#: A fenced block: its kind (a language, or a ``{directive}``), its argument and its body.
FENCE = re.compile(r"^```(\{[\w-]+\}|\w*) *(.*?)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str, str]]:
    return FENCE.findall(PAGE.read_text())


def schedule() -> dict[str, Any]:
    return runpy.run_path(str(SETTINGS))["SQLQUEUE_SCHEDULE"]  # type: ignore[no-any-return]


def shell_lines() -> list[list[str]]:
    return [shlex.split(line) for kind, _, body in blocks() if kind == "sh" for line in body.splitlines()]


def test_every_block_is_the_included_settings_or_a_command_checked_here() -> None:
    kinds = [(kind, argument) for kind, argument, _ in blocks()]
    assert kinds == [("{literalinclude}", "examples/recurring_settings.py"), ("sh", "")]
    assert all(line[:3] == ["python", "manage.py", "sqlqueue_schedule"] for line in shell_lines())


@pytest.mark.django_db
def test_the_settings_pass_the_system_checks() -> None:
    with override_settings(SQLQUEUE_SCHEDULE=schedule()):
        problems = [message for message in checks.run_checks() if message.id and message.id.startswith("sqlqueue.")]
    assert problems == []


@pytest.mark.django_db
def test_the_commands_print_the_entries_with_their_ticks_at_the_wall_time_they_name() -> None:
    with override_settings(SQLQUEUE_SCHEDULE=schedule(), TIME_ZONE="America/New_York"):
        outputs = []
        for line in shell_lines():
            out = StringIO()
            call_command(*line[2:], stdout=out)
            outputs.append(out.getvalue().splitlines())
    nightly = outputs[0][:4]
    assert nightly[0] == "nightly-report: shop.tasks.build_report, 0 3 * * * (Europe/Paris), missed=latest, enabled"
    assert all(re.fullmatch(r"  \S+ 03:00:00 CES?T \(Europe/Paris\)", tick) for tick in nightly[1:]), nightly


def test_the_cron_extra_it_installs_exists() -> None:
    assert 'pip install "django-sqlqueue[cron]"' in PAGE.read_text()
    # pyproject.toml read as text: tomllib is Python 3.11+.
    assert re.search(r'^cron = \["cronsim[<>=]', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)


def test_the_time_it_shows_is_the_one_the_admin_and_the_command_write() -> None:
    tick = datetime.datetime(2026, 11, 27, 2, tzinfo=datetime.timezone.utc)
    assert f"`{wall_time(tick, 'Europe/Paris')}`" in PAGE.read_text()
