"""tox plugin (tox loads ``toxfile.py`` by itself): find interpreters installed with pyenv.

pyenv's shims answer only for the versions selected in the shell, and tox probes
interpreters in an environment without ``PYENV_VERSION``, so on a machine whose
``python3`` is 3.11 the Django 6.x environments would find no 3.12+ at all. Every
CPython 3.10+ under ``$PYENV_ROOT/versions`` is offered to tox's discovery first."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from tox.plugin import impl

if TYPE_CHECKING:
    from tox.config.sets import ConfigSet
    from tox.session.state import State


def pyenv_interpreters() -> list[str]:
    """The ``python3`` of every pyenv-installed CPython 3.10 or newer, newest first."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = []
    for executable in root.glob("versions/3.*/bin/python3"):
        version = executable.parent.parent.name
        parts = version.split(".")
        if len(parts) == 3 and all(part.isdigit() for part in parts) and int(parts[1]) >= 10:
            found.append((tuple(map(int, parts)), str(executable)))
    return [executable for _, executable in sorted(found, reverse=True)]


@impl
def tox_add_core_config(core_conf: ConfigSet, state: State) -> None:
    options = state.conf.options
    options.discover = [*(getattr(options, "discover", None) or []), *pyenv_interpreters()]
