"""Excerpts of the example projects show the imports they use. A ``literalinclude`` of
part of a Python file (one function, ``:pyobject:``, or a marked part, ``:start-after:``)
is preceded by that file's lines that import the names the part uses, and by the
one-line module-level values it reads (a list the tasks append to): a reader who copies
the excerpt copies code that runs, and the lines shown are the file's own, so they
cannot drift from it.

An excerpt with lines to emphasize, or with a ``:prepend:`` of its own, is left as it is
(the lines added would move the emphasis). Sphinx is imported by :func:`setup` alone:
the tests read :func:`needed_lines` without it."""

from __future__ import annotations

import ast
import builtins
import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sphinx.application import Sphinx

#: The options that make a ``literalinclude`` an excerpt.
EXCERPTS = {"pyobject", "start-after", "start-at"}
#: The options whose lines the added ones would move.
LEFT_AS_IS = {"emphasize-lines", "prepend", "lineno-match", "lines", "diff"}


def needed_lines(source: str, excerpt: str) -> list[str]:
    """The top-level statements of ``source`` that bind a name ``excerpt`` uses and
    does not bind itself: its imports (of those names only) and its one-line
    assignments of a value made of nothing but builtins."""
    try:
        shown = ast.parse(textwrap.dedent(excerpt))
    except SyntaxError:
        return []
    used = {node.id for node in ast.walk(shown) if isinstance(node, ast.Name)} - _imported(shown)
    lines = []
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            names = [alias for alias in statement.names if _bound(alias) in used]
            if names:
                statement.names = names
                lines.append(ast.unparse(statement))
        elif _plain_value(statement) and _targets(statement) & used:
            segment = ast.get_source_segment(source, statement)
            if segment is not None:
                lines.append(segment)
    return lines


def _bound(alias: ast.alias) -> str:
    return (alias.asname or alias.name).split(".")[0]


def _imported(tree: ast.AST) -> set[str]:
    return {
        _bound(alias)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }


def _targets(statement: ast.stmt) -> set[str]:
    targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
    return {target.id for target in targets if isinstance(target, ast.Name)}


def _plain_value(statement: ast.stmt) -> bool:
    """A one-line assignment whose names are all builtins (``synced: list[int] = []``)."""
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.lineno != statement.end_lineno:
        return False
    parts = [statement.value, getattr(statement, "annotation", None)]
    return all(
        node.id in vars(builtins)
        for part in parts
        if part is not None
        for node in ast.walk(part)
        if isinstance(node, ast.Name)
    )


def setup(app: Sphinx) -> dict[str, Any]:
    from docutils.nodes import Node
    from sphinx.directives.code import LiteralInclude, LiteralIncludeReader

    class ExcerptWithImports(LiteralInclude):
        """Sphinx's ``literalinclude``, with an excerpt's imports prepended."""

        def run(self) -> list[Node]:
            path = self.arguments[0]
            if path.endswith(".py") and EXCERPTS & set(self.options) and not LEFT_AS_IS & set(self.options):
                _, filename = self.env.relfn2path(path)
                reader = LiteralIncludeReader(filename, self.options, self.config)
                excerpt, _ = reader.read(location=self.get_location())
                with open(filename, encoding=self.options.get("encoding", self.config.source_encoding)) as file:
                    if lines := needed_lines(file.read(), excerpt):
                        self.options["prepend"] = "\n".join(lines) + "\n"
            return super().run()

    app.add_directive("literalinclude", ExcerptWithImports, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
