"""Database wrappers that never connect: what an engine reads of its settings and
its driver needs no server."""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import load_backend


def unopened(engine: str, options: dict[str, Any] | None, alias: str = "jobs") -> BaseDatabaseWrapper:
    """A database wrapper for these settings that never connects: the claim checks read settings only."""
    settings_dict: dict[str, Any] = {"ENGINE": f"django.db.backends.{engine}", "NAME": "jobs"}
    if options is not None:
        settings_dict["OPTIONS"] = options
    made: BaseDatabaseWrapper = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, alias)
    return made
