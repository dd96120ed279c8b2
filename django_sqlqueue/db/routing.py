"""Which database the queue works on: one answer for every claim, finish, insert,
rescue, ``LISTEN`` and admin change, and another for the figures that only look.

Django's routers may send reads to a replica. The queue must not work there: a
replica lags behind the commits that make jobs visible, cannot lock rows, and
would hand a worker jobs that are already claimed on the primary. A page of figures
can bear that lag, and sparing the primary its reads is what the replica is for."""

from __future__ import annotations

from django.db import models, router


def queue_db(model: type[models.Model], using: str | None = None) -> str:
    """The alias the queue reads and writes ``model``'s rows on: ``using`` when a caller
    chose one (``Job.objects.using(...)``), else where the router sends its writes."""
    return using or router.db_for_write(model)


def read_db(model: type[models.Model]) -> str:
    """The alias the figures that only look read ``model``'s rows on (the admin's pages,
    ``sqlqueue_stats``, the metrics): where the router sends its reads, a replica
    perhaps, whose figures trail the primary's by its lag. Nothing that claims, locks,
    writes or decides reads there: the health check reads the primary."""
    return router.db_for_read(model)
