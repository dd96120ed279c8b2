"""The queue's own processes connect without Django's connection pool."""

from __future__ import annotations

from django.db import connections


def without_pool() -> None:
    """Take Django's connection pool (``"pool"`` in a PostgreSQL database's ``OPTIONS``,
    Django 5.1+) out of this process's settings; call it before any connection exists.

    For the processes the queue runs itself: its workers and its commands run from the
    command line. A worker keeps every thread's connection open for its life, which
    Django refuses beside a pool (a pool in each worker would only hold more idle
    sessions on the server). A command holds one connection at a time; a pool would only
    make it wait out the pool's timeout (30 s by default), logging every attempt, where
    a direct connection to a database that is down fails at once. Web processes and
    ``call_command`` keep the project's pool."""
    for alias in connections:
        settings = connections.settings[alias]
        settings["OPTIONS"] = {name: value for name, value in settings["OPTIONS"].items() if name != "pool"}
