"""Tasks that ship with the app (this module is autodiscovered like any app's tasks.py)."""

from __future__ import annotations

from django_sqlqueue.rules.registry import job


@job(name="sqlqueue.noop")
def noop(*args: object, **kwargs: object) -> None:
    """Does nothing: what the benchmark runs, and a cheap end-to-end check of a deployment."""
