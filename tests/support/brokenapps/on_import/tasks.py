"""An installed app's tasks module that raises on import, as a bad deployment's would."""

from __future__ import annotations

raise RuntimeError("this tasks module is broken on purpose")
