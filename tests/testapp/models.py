from __future__ import annotations

from django.db import models


class Receipt(models.Model):
    """The side effect of the ``record`` task: one row per token, however often it ran.

    ``runs`` counts the executions, so a test can tell "exactly once" from "at least once"."""

    token = models.CharField(max_length=100, unique=True)
    runs = models.PositiveIntegerField(default=1)

    def __str__(self) -> str:
        return self.token
