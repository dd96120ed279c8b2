"""Every ``manage.py <command> ...`` line the documentation shows, in a code block of a
page or in a file a page includes, parses: the command is one of this project's, and its
parser (abbreviations off) takes the options and values shown. A renamed option fails
here, not in a reader's terminal."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import CommandError, get_commands, load_command_class

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: Files a page may include as commands to run: units, manifests, scripts. (The example
#: project's Python files are run by ``test_howto_examples``.)
INCLUDED_SUFFIXES = {".service", ".yaml", ".yml", ".sh", ".ini", ".txt", ".json", ".toml", ".cfg", ".dockerfile"}
FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})")
MANAGE_PY = "manage.py"


def _code_lines(path: Path) -> Iterator[str]:
    """The lines of ``path`` a reader may copy: all of an included file, the code
    blocks of a page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if path.suffix != ".md":
        yield from lines
        return
    fence: str | None = None
    for line in lines:
        if match := FENCE.match(line):
            marker = match.group(1)[0]
            fence = None if fence == marker else fence or marker
        elif fence is not None:
            yield line


def _words(line: str) -> list[str]:
    """The words of a command line, or of an exec list (``["python", "manage.py", ...]``)."""
    if exec_list := re.search(r"\[\s*\".*\"\s*\]", line):
        return [str(word) for word in json.loads(exec_list.group(0))]
    return shlex.split(line.split(MANAGE_PY, 1)[1], comments=True)


def shown_invocations(docs: Path = DOCS) -> list[tuple[str, str, list[str]]]:
    """``(file, command, arguments)`` for each ``manage.py`` call shown under ``docs``."""
    shown = []
    for path in sorted(docs.rglob("*")):
        if path.suffix not in INCLUDED_SUFFIXES | {".md"} or path.name == "conf.py" or "_build" in path.parts:
            continue
        for line in _code_lines(path):
            if MANAGE_PY not in line:
                continue
            words = _words(line)
            if MANAGE_PY in words:
                words = words[words.index(MANAGE_PY) + 1 :]
            if words:
                shown.append((str(path.relative_to(docs)), words[0], words[1:]))
    return shown


def parse(command: str, arguments: list[str]) -> argparse.Namespace:
    """``arguments`` parsed by ``command``'s parser, as ``manage.py`` would, except that an
    abbreviated option is refused: the docs spell options out."""
    app = get_commands().get(command)
    if app is None:
        raise CommandError(f"no command {command!r}")
    parser = load_command_class(app, command).create_parser(MANAGE_PY, command)
    parsers = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            parsers.extend(action.choices.values())
    for each in parsers:
        each.allow_abbrev = False
    return parser.parse_args(arguments)


SHOWN = shown_invocations()


def test_the_docs_show_commands() -> None:
    commands = {command for _, command, _ in SHOWN}
    assert {"runworkers", "sqlqueue_health", "sqlqueue_prune", "sqlqueue_stats", "sqlqueue_queues"} <= commands


@pytest.mark.parametrize(("where", "command", "arguments"), SHOWN, ids=[f"{w}:{c}" for w, c, _ in SHOWN])
def test_each_command_line_shown_parses(where: str, command: str, arguments: list[str]) -> None:
    parse(command, arguments)


def test_a_renamed_option_or_command_is_caught(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text(
        "Run `manage.py nothing` (prose is not read).\n\n"
        "```sh\npython manage.py runworkers --queue mail  # one queue\n```\n"
    )
    (tmp_path / "probe.yaml").write_text('exec: {command: ["python", "manage.py", "sqlqueue_healthy"]}\n')
    shown = shown_invocations(tmp_path)
    assert shown == [("page.md", "runworkers", ["--queue", "mail"]), ("probe.yaml", "sqlqueue_healthy", [])]
    for _, command, arguments in shown:
        with pytest.raises(CommandError):
            parse(command, arguments)
    assert parse("runworkers", ["--queues", "mail"]).queues
