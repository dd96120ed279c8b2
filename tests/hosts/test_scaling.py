"""Throughput with 1, 2 and 4 hosts of 2 worker processes each, on no-op and on 5 ms jobs:
reported, not asserted (this machine has 2 cores), beside the claims' lost candidates."""

from __future__ import annotations

import pytest

from tests.hosts.conftest import Cluster, report
from tests.hosts.figures import drain

pytestmark = pytest.mark.measure

JOBS = {"noop": (4000, "[]"), "sleep": (1000, "[0.005]")}
HOSTS = [1, 2, 4]
ROWS: dict[str, list[list[object]]] = {}


@pytest.mark.parametrize("task", list(JOBS))
@pytest.mark.parametrize("hosts", HOSTS)
def test_throughput_by_hosts(cluster: Cluster, hosts: int, task: str) -> None:
    count, args = JOBS[task]
    cluster.enqueue(f"tests.testapp.tasks.{task}", count, args)
    rate, lost = drain(cluster, cluster.network.hosts[:hosts])
    vendor = cluster.server.vendor
    rows = ROWS.setdefault(vendor, [])
    rows.append([task if task == "noop" else "5 ms", hosts, hosts * 2, count, f"{rate:,.0f}", lost])
    if len(rows) == len(JOBS) * len(HOSTS):
        report(
            f"scaling on {vendor}: jobs/s from the first claim to the last finish",
            ["jobs", "hosts", "processes", "count", "jobs/s", "lost candidates"],
            rows,
        )
