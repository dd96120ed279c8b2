"""Directives that generate the reference pages from the code, so they cannot drift:

- ``sqlqueue-settings``: every setting of ``conf.Settings`` (name, type, default, docstring);
- ``sqlqueue-commands``: every management command's options, from its own argparse parser;
- ``sqlqueue-checks``: every system check id of ``checks.ids.CHECK_IDS``;
- ``sqlqueue-lifecycle``: the job's state diagram, drawn from ``rules.lifecycle.TRANSITIONS``;
- ``sqlqueue-transitions``: the same table in words: states, guard, who makes each, its signal.

Docstrings are written in reStructuredText's inline markup (double backquotes), which
these directives parse as such."""

from __future__ import annotations

import argparse
import pkgutil
from collections.abc import Iterable
from typing import Any

from django.core.management import BaseCommand, load_command_class
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinxcontrib.mermaid import Mermaid

#: Options every Django command has; the Django documentation describes them.
DJANGO_OPTIONS = {
    "--version",
    "--verbosity",
    "--settings",
    "--pythonpath",
    "--traceback",
    "--no-color",
    "--force-color",
    "--skip-checks",
    "--help",
}


def _inline(text: str, directive: SphinxDirective) -> list[nodes.Node]:
    """``text`` with its reStructuredText inline markup parsed (double backquotes)."""
    parsed, messages = directive.state.inline_text(" ".join(text.split()), directive.lineno)
    return [*parsed, *messages]


def _paragraph(text: str, directive: SphinxDirective) -> nodes.paragraph:
    return nodes.paragraph("", "", *_inline(text, directive))


def _item(term: list[nodes.Node], body: Iterable[nodes.Node]) -> nodes.definition_list_item:
    return nodes.definition_list_item("", nodes.term("", "", *term), nodes.definition("", *body))


def _literal(text: str) -> nodes.literal:
    return nodes.literal(text, text)


def _format_default(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!s}: {_format_default(item)}" for key, item in value.items()) + "}"
    return repr(value)


class SettingsDirective(SphinxDirective):
    """Every ``SQLQUEUE_*`` setting, in the order ``Settings`` declares them."""

    def run(self) -> list[nodes.Node]:
        from django_sqlqueue.conf import Setting, Settings

        items = [
            _item(
                [_literal(name)],
                [
                    nodes.paragraph(
                        "",
                        "",
                        nodes.Text("Type "),
                        _literal(setting.annotation),
                        nodes.Text(", default "),
                        _literal(_format_default(setting.default)),
                        nodes.Text("."),
                    ),
                    *(_paragraph(part, self) for part in (setting.__doc__ or "").split("\n\n")),
                ],
            )
            for name, setting in vars(Settings).items()
            if isinstance(setting, Setting)
        ]
        return [nodes.definition_list("", *items)]


def _commands() -> list[tuple[str, BaseCommand]]:
    from django_sqlqueue.management import commands

    return [
        (module.name, load_command_class("django_sqlqueue", module.name))
        for module in pkgutil.iter_modules(commands.__path__)
    ]


def _option(action: argparse.Action, directive: SphinxDirective) -> nodes.definition_list_item:
    if not action.option_strings:
        return _item([_literal(action.metavar or action.dest)], [_paragraph(action.help or "", directive)])
    metavar = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
    body = [_paragraph(action.help, directive)] if action.help else []
    facts = []
    if action.choices is not None:
        facts.append("one of " + ", ".join(map(str, action.choices)))
    # A help that names its default says it better than the value (one per CPU, not this machine's 2).
    shown = action.nargs != 0 and "default" not in (action.help or "")
    if shown and action.default not in (None, "", argparse.SUPPRESS):
        facts.append(f"default {action.default!r}")
    if facts:
        body.append(nodes.paragraph("", "; ".join(facts).capitalize() + "."))
    return _item([_literal(", ".join(action.option_strings) + metavar)], body)


def _subcommands(action: argparse._SubParsersAction[Any], directive: SphinxDirective) -> list[nodes.Node]:
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return [
        _item(
            [_literal(" ".join(parser.format_usage().split()).removeprefix("usage: manage.py "))],
            [_paragraph(helps.get(name, ""), directive), _options(parser, directive)],
        )
        for name, parser in action.choices.items()
    ]


def _options(parser: argparse.ArgumentParser, directive: SphinxDirective) -> nodes.definition_list:
    """The options of ``parser`` (and of its subcommands), less Django's own."""
    items: list[nodes.Node] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            items += _subcommands(action, directive)
        elif not DJANGO_OPTIONS & set(action.option_strings):
            items.append(_option(action, directive))
    return nodes.definition_list("", *items)


class CommandsDirective(SphinxDirective):
    """Every management command: its help and options, as ``manage.py COMMAND --help`` has them."""

    def run(self) -> list[nodes.Node]:
        result: list[nodes.Node] = []
        for name, command in _commands():
            parser = command.create_parser("manage.py", name)
            usage = " ".join(parser.format_usage().split()).removeprefix("usage: ")
            result += [
                nodes.rubric("", "", _literal(name)),
                _paragraph(command.help, self),
                nodes.literal_block(usage, usage),
                _options(parser, self),
            ]
        return result


class ChecksDirective(SphinxDirective):
    """Every system check id, with its level, what it reports and its hint."""

    def run(self) -> list[nodes.Node]:
        from django_sqlqueue.checks.ids import CHECK_IDS

        items = [
            _item(
                [_literal(check.id), nodes.Text(f" ({check.level.__name__.lower()})")],
                [_paragraph(check.reports, self), _paragraph(f"Hint: {check.hint}", self)],
            )
            for check in CHECK_IDS.values()
        ]
        return [nodes.definition_list("", *items)]


class LifecycleDirective(Mermaid):
    """The job's state diagram, as Mermaid draws it, from the transitions table itself."""

    has_content = False

    def get_mm_code(self) -> str:
        from django_sqlqueue.rules.lifecycle import mermaid_diagram

        return mermaid_diagram()


def _cell(*children: nodes.Node) -> nodes.entry:
    return nodes.entry("", nodes.paragraph("", "", *children))


def _row(cells: Iterable[nodes.entry]) -> nodes.row:
    return nodes.row("", *cells)


class TransitionsDirective(SphinxDirective):
    """Every transition of ``rules.lifecycle.TRANSITIONS`` as a row: where it starts and
    ends, its guard in words, who makes it, and the signal it sends (``signals.signal_of``)
    or why it sends none (``signals.SILENT``)."""

    HEADINGS = ("Transition", "From", "To", "Guard", "Made by", "Signal")

    def run(self) -> list[nodes.Node]:
        from django.dispatch import Signal

        from django_sqlqueue import signals
        from django_sqlqueue.rules.lifecycle import TRANSITIONS, Condition

        # The first public name of each signal in signals.py: job_succeeded before job_ended[...].
        names: dict[int, str] = {}
        for name, value in vars(signals).items():
            if isinstance(value, Signal) and not name.startswith("_"):
                names.setdefault(id(value), name)
        body = []
        for transition in TRANSITIONS.values():
            sources = ", ".join(source.value for source in transition.sources) or "(new row)"
            target = "(deleted)" if transition.target is None else transition.target.value
            guard = "; ".join(condition.value for condition in Condition if condition in transition.guard)
            signal = signals.signal_of(transition)
            sent: list[nodes.Node] = (
                [_literal(names[id(signal)])]
                if signal is not None
                else [nodes.Text(f"none: {signals.SILENT[transition]}")]
            )
            body.append(
                _row(
                    [
                        _cell(_literal(transition.name)),
                        _cell(nodes.Text(sources)),
                        _cell(nodes.Text(target)),
                        _cell(nodes.Text(guard)),
                        _cell(nodes.Text(transition.by)),
                        _cell(*sent),
                    ]
                )
            )
        group = nodes.tgroup("", cols=len(self.HEADINGS))
        group += [nodes.colspec(colwidth=1) for _ in self.HEADINGS]
        group += nodes.thead("", _row(_cell(nodes.Text(heading)) for heading in self.HEADINGS))
        group += nodes.tbody("", *body)
        return [nodes.table("", group)]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("sqlqueue-settings", SettingsDirective)
    app.add_directive("sqlqueue-commands", CommandsDirective)
    app.add_directive("sqlqueue-checks", ChecksDirective)
    app.add_directive("sqlqueue-lifecycle", LifecycleDirective)
    app.add_directive("sqlqueue-transitions", TransitionsDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
