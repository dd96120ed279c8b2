"""The maintenance lease with real ``runworkers`` processes: one supervisor leads, and
when it is killed with SIGKILL another takes over once the lease has run out, with no
recurring tick lost or doubled on the way."""

from __future__ import annotations

import datetime
import itertools
import json
import socket
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import DEFAULT_DB_ALIAS

from django_sqlqueue.db import leadership
from django_sqlqueue.db.clock import database_now
from django_sqlqueue.models import Job, Worker
from tests.support.workers import FAST_CLOCKS, Workers, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

StartWorkers = Callable[..., Workers]
SECOND = datetime.timedelta(seconds=1)
# The ticks' jobs wait on a queue no worker claims from: a job the killed supervisor's
# worker held would be rescued as a failed attempt, its retry due at another time, and
# the ticks are read from the jobs' run_at.
SCHEDULE = json.dumps({"tick": {"task": "tests.testapp.tasks.noop", "every": 1, "missed": "all", "queue": "ticks"}})
LEASE = datetime.timedelta(seconds=float(FAST_CLOCKS["SQLQUEUE_LEASE"]))
MARGIN = datetime.timedelta(seconds=1)


def test_a_killed_leader_is_replaced_and_no_tick_is_lost_or_doubled(start_workers: StartWorkers) -> None:
    supervisors = {}
    for _ in range(2):
        workers = start_workers("--processes", "1", "--queues", "default", SQLQUEUE_SCHEDULE=SCHEDULE)
        supervisors[f"{socket.gethostname()}:{workers.process.pid}"] = workers
    logs = lambda: "\n".join(workers.text() for workers in supervisors.values())  # noqa: E731
    wait_until(lambda: Worker.objects.count() == 2, timeout=90, why=logs)
    leader = wait_until(lambda: leadership.current(DEFAULT_DB_ALIAS), timeout=30, why=logs)
    assert leader.holder in supervisors
    wait_until(lambda: Job.objects.count() >= 3, timeout=30, why=logs)

    supervisors.pop(leader.holder).kill()
    killed_at = database_now(DEFAULT_DB_ALIAS)
    (follower,) = supervisors
    successor = wait_until(
        lambda: (
            (current := leadership.current(DEFAULT_DB_ALIAS)) is not None and current.holder == follower and current
        ),
        timeout=30,
        why=logs,
    )
    # Taken over as the lease ran out: the follower tries again at that moment. It was
    # renewed at most a third of a lease before the kill; the margin is for a loaded machine.
    assert successor.acquired_at - killed_at <= LEASE + MARGIN
    after = Job.objects.count()
    wait_until(lambda: Job.objects.count() >= after + 3, timeout=30, why=logs)
    (survivor,) = supervisors.values()
    assert survivor.stop() == 0, survivor.text()

    per_tick = Counter(Job.objects.values_list("run_at", flat=True))
    assert [tick for tick, jobs in per_tick.items() if jobs > 1] == []
    ticks = sorted(per_tick)
    # The ticks of the takeover were caught up (missed="all"): no gap.
    assert [later - earlier for earlier, later in itertools.pairwise(ticks)] == [SECOND] * (len(ticks) - 1)
