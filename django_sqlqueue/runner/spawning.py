"""Starting a process with ``spawn`` whatever launched this one.

A spawned child first imports its parent's ``__main__`` (as ``__mp_main__``): a
``manage.py`` or a script without an ``if __name__ == "__main__"`` guard would run
again in every child, and the command in it with it. This module imports only the
standard library."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """Start a process without telling it where ``__main__`` is.

    The children started here need nothing from it (their entry points live in the
    package), and ``spawn`` reads where ``__main__`` is while ``start()`` runs, so it is
    hidden for just that long."""
    main = sys.modules["__main__"]
    saved: dict[str, Any] = {name: main.__dict__[name] for name in ("__file__", "__spec__") if name in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)
