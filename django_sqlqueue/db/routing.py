"""Which database the queue works on: one answer for every claim, finish, insert,
rescue, ``LISTEN`` and admin change.

Django's routers may send reads to a replica. The queue must not read there: a
replica lags behind the commits that make jobs visible, cannot lock rows, and
would hand a worker jobs that are already claimed on the primary."""

from __future__ import annotations

from django.db import models, router


def queue_db(model: type[models.Model], using: str | None = None) -> str:
    """The alias the queue reads and writes ``model``'s rows on: ``using`` when a caller
    chose one (``Job.objects.using(...)``), else where the router sends its writes."""
    return using or router.db_for_write(model)
