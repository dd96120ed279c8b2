"""How many database connections this process has opened: the worker tests' measure of
whether a worker owns its connections or opens one per batch."""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_opened = 0


def count(sender: Any, **kwargs: Any) -> None:
    """A ``connection_created`` receiver, connected by the app's ``ready()``."""
    global _opened
    with _lock:
        _opened += 1


def opened() -> int:
    return _opened
