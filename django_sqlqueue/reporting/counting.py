"""Jobs by queue and status, as the admin's overview, ``sqlqueue_stats`` and the
Prometheus gauges show them, at a cost that does not grow with the finished jobs.

While the table is small every count is exact: the finished statuses read from the
``sqlqueue_job_queue_status`` index (which takes seconds on a table of millions of
rows), the active ones from their own. Past :data:`ESTIMATE_ABOVE_ROWS` the finished statuses, which
only grow, are estimated: on PostgreSQL from the planner's statistics (no row is read),
elsewhere from a sample of rows read by primary key. ``READY`` and ``RUNNING``, the figures that say whether work
waits, stay exact: their indexes hold only them."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from dataclasses import dataclass
from functools import reduce
from operator import or_

from django.db.models import Count, Max, Min, Q

from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.schema.indexes import FINISHED_JOBS, FinishedStatus, InStatus
from django_sqlqueue.managers import JobQuerySet
from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import ACTIVE, FINISHED

#: Below this many rows every count is exact.
ESTIMATE_ABOVE_ROWS = 1_000_000
#: The sample past that size. The ids' span is cut into STRATA equal strata, each probed
#: with FIRST_RUNS runs of RUN_LENGTH consecutive ids. A stratum where fewer than SPARSE
#: of the probed ids are finished jobs is counted rather than estimated: its rows are
#: few (old failures that outlive the successes pruned around them, say), and a sample
#: would spend its reads on gaps. The dense strata share SECOND_RUNS more runs, by their
#: estimated rows. Runs rather than ids drawn apart, as the ids of a run share a page or
#: two: the pages a sample reads stay few enough for a default buffer pool to hold, where
#: ids drawn apart each read a page of their own, many times slower on a large table.
STRATA = 100
FIRST_RUNS = 10
SECOND_RUNS = 1_000
RUN_LENGTH = 10
SPARSE = 0.05
#: Ids per query of the sample: under SQLite's oldest limit of 999 parameters.
SAMPLE_CHUNK = 900


@dataclass(frozen=True)
class QueueCounts:
    """Per queue with jobs, its jobs by status (the statuses it has none of left out)."""

    counts: dict[str, dict[str, int]]
    #: The queues whose finished statuses are estimates.
    estimated: frozenset[str] = frozenset()

    def estimated_statuses(self, queue: str) -> tuple[str, ...]:
        return FINISHED if queue in self.estimated else ()


def status_counts(jobs: JobQuerySet[Job]) -> dict[str, dict[str, int]]:
    """Per queue with jobs in ``jobs``, its jobs by status, exactly: the finished ones
    read from the ``sqlqueue_job_queue_status`` index alone (on PostgreSQL it holds
    them only; on MySQL/MariaDB it holds :class:`FinishedStatus`, NULL for the others),
    the active ones as :func:`active_counts` reads them."""
    counts: dict[str, dict[str, int]] = {}
    grouped = (
        engine_for(jobs.db)
        .finished_first(jobs, FINISHED_JOBS)
        .values_list("queue", FinishedStatus())
        .annotate(count=Count("*"))
    )
    for queue, status, count in grouped.order_by():
        if status in FINISHED:
            counts.setdefault(queue, {})[status] = count
    return active_counts(jobs, counts)


def active_counts(jobs: JobQuerySet[Job], counts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """``counts`` with, per queue, its jobs of each active status, counted exactly at
    any size: one query each, so that each reads its own index."""
    for status in ACTIVE:
        # By queue alone: the status is known, and selecting it would read each row from
        # the table rather than the status's own index, several times slower.
        in_status = jobs.filter(InStatus(status)).values_list("queue").annotate(count=Count("*")).order_by()
        for queue, count in in_status:
            counts.setdefault(queue, {})[status] = count
    return counts


def queue_counts(jobs: JobQuerySet[Job], *, estimate_above: int = ESTIMATE_ABOVE_ROWS) -> QueueCounts:
    """The counts of ``jobs`` (the whole table on one database), the finished statuses
    estimated once it holds more than ``estimate_above`` rows."""
    if engine_for(jobs.db).keeps_value_shares:
        estimates = planner_estimates(jobs, above=estimate_above)
    else:
        estimates = sampled_estimates(jobs, above=estimate_above)
    if estimates is None:
        return QueueCounts(status_counts(jobs))
    counts = active_counts(jobs, {queue: dict(by_status) for queue, by_status in estimates.items()})
    return QueueCounts(counts, frozenset(estimates))


def planner_estimates(jobs: JobQuerySet[Job], *, above: int) -> dict[str, dict[str, int]] | None:
    """On PostgreSQL, per queue its finished jobs by status as the planner estimates them
    from ``ANALYZE``'s statistics: the table's rows times the share of the queue times
    the share of the status. No row is read, at any size; a queue too rare for the
    statistics' common values is left out. None before the table was first analysed,
    or while it holds fewer than ``above`` rows."""
    database, table = engine_for(jobs.db), jobs.model._meta.db_table
    total = database.estimated_rows(table)
    shares = database.value_shares(table, ["queue", "status"])
    if total < max(above, 0) or not shares.get("queue") or not shares.get("status"):
        return None
    return {
        queue: {status: round(total * share * shares["status"].get(status, 0)) for status in FINISHED}
        for queue, share in shares["queue"].items()
    }


def sampled_estimates(jobs: JobQuerySet[Job], *, above: int) -> dict[str, dict[str, int]] | None:
    """Per queue its finished jobs by status: estimated from a stratified sample of the
    ids between the lowest and the highest (see :data:`STRATA`), where each drawn id of
    a dense stratum that is a finished job's row counts for (the stratum's ids) / (its
    ids drawn) of them, and counted in the sparse strata. Every row of a stratum is as
    likely to be drawn, however pruning left gaps, so the estimate is unbiased; the draw
    is the same for the same ids, so an unchanged table shows the same figures each
    time. A queue none of whose finished jobs was drawn or counted is left out. None
    while the ids span ``above`` or fewer (so the table holds no more rows than that),
    or when the sample finds no more finished jobs than that."""
    # Two queries: SQLite reads the whole table for MIN and MAX in one, and the index for each alone.
    lowest = jobs.aggregate(id=Min("pk"))["id"]
    if lowest is None:
        return None
    highest = jobs.aggregate(id=Max("pk"))["id"]
    if highest - lowest + 1 <= max(above, 0):
        return None
    finished = jobs.filter(status__in=FINISHED).order_by()
    strata = [stratum for stratum in _strata(lowest, highest) if stratum]
    draw = random.Random(highest - lowest)
    first = [_runs(stratum, FIRST_RUNS, draw) for stratum in strata]
    found = _finished_rows(finished, [pk for drawn in first for pk in drawn])
    rows = {k: sum(pk in found for pk in drawn) / len(drawn) * len(strata[k]) for k, drawn in enumerate(first)}
    dense = {k: rows[k] for k in rows if rows[k] >= SPARSE * len(strata[k])}
    total = sum(dense.values())
    unseen = [k for k in dense if len(first[k]) < len(strata[k])]  # the others were drawn whole
    second = {k: _runs(strata[k], round(SECOND_RUNS * dense[k] / total), draw) for k in unseen}
    found.update(_finished_rows(finished, [pk for drawn in second.values() for pk in drawn]))
    estimates: defaultdict[tuple[str, str], float] = defaultdict(float)
    for k in dense:
        drawn = set(first[k]).union(second.get(k, ()))
        for pk in drawn & found.keys():
            estimates[found[pk]] += len(strata[k]) / len(drawn)
    sparse = [Q(pk__range=(ids[0], ids[-1])) for ids in _joined(strata, set(rows) - set(dense))]
    if sparse:
        counted = finished.filter(reduce(or_, sparse)).values_list("queue", "status").annotate(count=Count("*"))
        for queue, status, count in counted:
            estimates[queue, status] += count
    if sum(estimates.values()) <= above:
        return None  # a few rows scattered over a wide span of ids: cheaper to count them
    by_queue: dict[str, dict[str, int]] = {}
    for (queue, status), count in estimates.items():
        by_queue.setdefault(queue, dict.fromkeys(FINISHED, 0))[status] = round(count)
    return by_queue


def _strata(lowest: int, highest: int) -> list[range]:
    """The ids from ``lowest`` to ``highest`` cut into :data:`STRATA` ranges as equal as may be."""
    span = highest - lowest + 1
    edges = [lowest + span * k // STRATA for k in range(STRATA + 1)]
    return [range(start, end) for start, end in itertools.pairwise(edges)]


def _runs(stratum: range, runs: int, draw: random.Random) -> list[int]:
    """``runs`` runs of :data:`RUN_LENGTH` ids of ``stratum``, each from a random start,
    wrapping round its end (so that every id is as likely to be drawn); every id when
    they would cover it."""
    if runs * RUN_LENGTH >= len(stratum):
        return list(stratum)
    starts = draw.sample(range(len(stratum)), runs)
    return sorted({stratum[(start + step) % len(stratum)] for start in starts for step in range(RUN_LENGTH)})


def _finished_rows(finished: JobQuerySet[Job], ids: list[int]) -> dict[int, tuple[str, str]]:
    """The queue and status of each of ``ids`` that is a row of ``finished``."""
    found = {}
    for start in range(0, len(ids), SAMPLE_CHUNK):
        for pk, queue, status in finished.filter(pk__in=ids[start : start + SAMPLE_CHUNK]).values_list(
            "pk", "queue", "status"
        ):
            found[pk] = (queue, status)
    return found


def _joined(strata: list[range], chosen: set[int]) -> list[range]:
    """The ``chosen`` strata, neighbours joined into one range."""
    joined: list[range] = []
    for k in sorted(chosen):
        if joined and joined[-1].stop == strata[k].start:
            joined[-1] = range(joined[-1].start, strata[k].stop)
        else:
            joined.append(strata[k])
    return joined
