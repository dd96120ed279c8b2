"""``docs/explanation/layout.md`` names every subpackage of ``django_sqlqueue``: a
folder added to the code and not to the page fails here."""

from __future__ import annotations

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
