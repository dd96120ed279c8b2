"""A module no test imports: a job row names it, and a worker must not import it."""

from __future__ import annotations

raise AssertionError("tests.support.poison was imported because a job row named it")
