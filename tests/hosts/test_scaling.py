"""Throughput with 1, 2 and 4 hosts of 2 worker processes each, on no-op and on 5 ms jobs:
reported, not asserted (this machine has 2 cores), beside the claims' lost candidates."""

from __future__ import annotations

import time

import pytest

from tests.hosts.conftest import Cluster, report

JOBS = {"tests.testapp.tasks.noop": 4000, "tests.testapp.tasks.sleep": 1000}
ROWS: dict[str, list[list[object]]] = {}


@pytest.mark.parametrize("task", list(JOBS))
@pytest.mark.parametrize("hosts", [1, 2, 4])
def test_throughput_by_hosts(cluster: Cluster, hosts: int, task: str) -> None:
    count = JOBS[task]
    cluster.enqueue(task, count, "[0.005]" if task.endswith("sleep") else "[]")
    started = [cluster.start_workers(host, "--burst", "--processes", "2") for host in cluster.network.hosts[:hosts]]
    # Workers delete their rows, counters and all, when they exit: read them while they run.
    lost = 0
    deadline = time.monotonic() + 600
    while any(workers.process.poll() is None for workers in started):
        assert time.monotonic() < deadline, started[0].text()
        [(counted,)] = cluster.query("SELECT COALESCE(SUM(candidates_lost), 0) FROM django_sqlqueue_worker")
        lost = max(lost, int(counted))
        time.sleep(0.2)
    for workers in started:
        assert workers.wait(10) == 0, workers.text()
    [(done, seconds)] = cluster.query(_figures(cluster.server.vendor))
    assert done == count  # every job ran once and is SUCCESSFUL
    vendor = cluster.server.vendor
    ROWS.setdefault(vendor, []).append([task.rsplit(".", 1)[1], hosts, hosts * 2, count, f"{count / float(seconds):,.0f}", lost])
    if len(ROWS[vendor]) == len(JOBS) * 3:
        report(
            f"scaling on {vendor}: jobs/s from the first claim to the last finish",
            ["task", "hosts", "processes", "jobs", "jobs/s", "lost candidates"],
            ROWS[vendor],
        )


def _figures(vendor: str) -> str:
    seconds = (
        "EXTRACT(EPOCH FROM MAX(finished_at) - MIN(started_at))"
        if vendor == "postgres"
        else "TIMESTAMPDIFF(MICROSECOND, MIN(started_at), MAX(finished_at)) / 1e6"
    )
    return f"SELECT COUNT(*), {seconds} FROM django_sqlqueue_job WHERE status = 'SUCCESSFUL' AND attempts = 1"
