"""The other designs of the jobs table side by side: each drained in raw SQL on scratch
tables of its own (``bench/design_tables``), beside the minimal table, round after round.

Apart from ``bench/ceiling``, whose drain processes import it without Django set up:
the designs are built from the models."""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.bench import ceiling
from django_sqlqueue.bench.design_tables import scratch
from django_sqlqueue.bench.raw import RawDatabase


def drain_designs(
    connection: BaseDatabaseWrapper,
    raw: RawDatabase,
    names: list[str],
    queue: str,
    count: int,
    processes: int,
    batch_size: int,
    rounds: int,
) -> dict[str, list[ceiling.Drained]]:
    """Each design of ``names`` (``bench/design_tables``) and the minimal table, filled with
    ``count`` ready jobs and drained, on scratch tables made for each drain: ``rounds``
    times, every other round in the reverse order, so that none always runs first (on a
    cold cache) or last (after the others' dead rows)."""
    order = ["minimal", *names]
    drains: dict[str, list[ceiling.Drained]] = {name: [] for name in order}
    for turn in range(rounds):
        for name in order if turn % 2 == 0 else order[::-1]:
            with raw.minimal() if name == "minimal" else scratch(name, connection, raw) as database:
                ceiling.insert_many_per_statement(database, queue, count)
                drains[name].append(ceiling.drain(database, queue, count, processes, batch_size))
    return drains
