"""``docs/howto/recurring.md``: every code block of the page is checked. Its settings
are included from the example project (``mysite/recurring.py``, whose own test runs the
system checks and ``sqlqueue_schedule`` on them); its ``manage.py`` line is parsed by
``test_commands_shown``; what is left is checked here: that there is nothing else, that
the extra it installs exists, and that the time it shows is written as the admin and the
command write it."""

from __future__ import annotations

import datetime
import re
import shlex
from pathlib import Path

from django_sqlqueue.rules.recurrence import wall_time

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "howto" / "recurring.md"
#: A fenced block: its kind (a language, or a ``{directive}``), its argument and its body.
FENCE = re.compile(r"^```(\{[\w-]+\}|\w*) *(.*?)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str, str]]:
    """The page's fenced blocks, but for its ``{index}`` entries (words for the search)."""
    return [block for block in FENCE.findall(PAGE.read_text()) if block[0] != "{index}"]


def test_every_block_is_the_example_projects_settings_or_a_command_parsed_elsewhere() -> None:
    assert [(kind, argument) for kind, argument, _ in blocks()] == [
        ("{literalinclude}", "examples/mysite/recurring.py"),
        ("sh", ""),
    ]
    assert ':start-after: "# [recurring]"' in blocks()[0][2]
    commands = [shlex.split(line) for line in blocks()[1][2].splitlines()]
    assert commands == [["python", "manage.py", "sqlqueue_schedule", "--count", "3"]]


def test_the_cron_extra_it_installs_exists() -> None:
    assert 'pip install "django-sqlqueue[cron]"' in PAGE.read_text()
    # pyproject.toml read as text: tomllib is Python 3.11+.
    assert re.search(r'^cron = \["cronsim[<>=]', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)


def test_the_time_it_shows_is_the_one_the_admin_and_the_command_write() -> None:
    tick = datetime.datetime(2026, 11, 27, 2, tzinfo=datetime.timezone.utc)
    assert f"`{wall_time(tick, 'Europe/Paris')}`" in PAGE.read_text()
