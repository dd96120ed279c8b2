"""A replica under the usual router (reads to the replica, writes to the primary): a
streaming standby of PostgreSQL, a binary-log replica of MariaDB. With its replay
paused, as far behind as a replica can be, workers on two hosts still claim every job
once and finish it on the primary; ``sqlqueue_stats`` and the admin's pages read the
replica's older view, while the overview counts its closed hours on the primary;
once the replica catches up, they show every job done.

And the design's suggestion, measured: claim candidates read on the replica."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hosts.conftest import Cluster, report
from tests.hosts.figures import first_try_rate
from tests.hosts.network import Network
from tests.hosts.servers import MariaDBReplica, MariaDBSource, PostgresServer, PostgresStandby, Server
from tests.support.workers import ROOT, wait_until

JOBS = 600
#: The measurement's drains: no-op jobs, claim loops per host, hosts, batch size, rounds of the pair.
MEASURED_JOBS = 20_000
LOOPS = 2
LOOP_HOSTS = 2
BATCH = 100
ROUNDS = 2


@contextlib.contextmanager
def replicated(server: Server, network: Network) -> Iterator[tuple[Server, PostgresStandby | MariaDBReplica]]:
    """A primary and its replica, both stopped on the way out. On PostgreSQL the primary
    is the suite's own cluster and the replica a streaming standby; on MariaDB a server
    with a binary log (the suite's own keeps none) and a replica applying it."""
    primary: Server = server
    replica: PostgresStandby | MariaDBReplica | None = None
    try:
        if isinstance(server, PostgresServer):
            replica = PostgresStandby(server)
        else:
            primary = MariaDBSource(network, server.root)
            replica = MariaDBReplica(primary)
        yield primary, replica
    finally:
        if replica is not None:
            replica.stop()
        if primary is not server:
            primary.stop()


def test_a_lagging_replica_serves_the_figures_and_never_the_claims(
    server: Server, network: Network, tmp_path: Path
) -> None:
    with replicated(server, network) as (primary, replica):
        cluster = Cluster(primary, network, tmp_path)
        try:
            _check_lagging_replica(cluster, replica)
        finally:
            cluster.close()


def _check_lagging_replica(cluster: Cluster, replica: PostgresStandby | MariaDBReplica) -> None:
    local, remote = (replica.replica_env(cluster.name, from_host=where) for where in (False, True))
    cluster.run_module("tests.hosts.admin_pages", "--setup", **local)
    wait_until(replica.caught_up, timeout=60, why=replica.log_text)
    replica.pause_replay()

    cluster.enqueue("tests.testapp.tasks.sleep", JOBS, "[0.002]", **local)
    hosts = cluster.network.hosts[:2]
    started = [cluster.start_workers(host, "--burst", "--processes", "2", **remote) for host in hosts]
    deadline = time.monotonic() + 300
    for workers in started:
        assert workers.wait(max(1.0, deadline - time.monotonic())) == 0, workers.text()
    rows = cluster.query("SELECT status, attempts, COUNT(*) FROM django_sqlqueue_job GROUP BY status, attempts")
    assert rows == [("SUCCESSFUL", 1, JOBS)], rows  # each claimed once, none missed

    # The replica has not seen one of them yet: the figures are read there.
    assert json.loads(cluster.manage("sqlqueue_stats", "--json", **local))["queues"] == []
    # No warning: the overview counted its closed hours on the primary (on a replica that fails, and says so).
    pages = json.loads(cluster.run_module("tests.hosts.admin_pages", **local))
    assert pages == {"changelist": 0, "overview": {}, "warnings": []}, pages

    replica.resume_replay()
    wait_until(replica.caught_up, timeout=60, why=replica.log_text)
    [queue] = json.loads(cluster.manage("sqlqueue_stats", "--json", **local))["queues"]
    assert queue["counts"]["SUCCESSFUL"] == JOBS, queue
    pages = json.loads(cluster.run_module("tests.hosts.admin_pages", **local))
    assert pages == {"changelist": JOBS, "overview": {"SUCCESSFUL": JOBS}, "warnings": []}, pages


def cpu_seconds(pid: int) -> float:
    """The CPU time of a server process, its threads and its children (the live ones
    and, through the parent's counters, those it has reaped: PostgreSQL's backends)."""
    ticks = os.sysconf("SC_CLK_TCK")

    def fields(of: int | str) -> list[str]:
        with contextlib.suppress(OSError), open(f"/proc/{of}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
        return []

    own = fields(pid)
    total = sum(int(value) for value in own[11:15])  # utime, stime, cutime, cstime
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (child := fields(entry)) and child[1] == str(pid):
            total += int(child[11]) + int(child[12])
    return total / ticks


@pytest.mark.measure
def test_claim_candidates_read_on_a_replica(server: Server, network: Network, tmp_path: Path) -> None:
    """The design's suggestion: read the claim's candidates on a replica, lock them on
    the primary. Paired drains of no-op jobs by 2 hosts x 2 claim loops, against the
    claim as it is; reported with the primary's and the replica's CPU per 1,000 jobs."""
    rows = []
    with replicated(server, network) as (primary, replica):
        for round_ in range(1, ROUNDS + 1):
            for mode in ("primary", "replica"):
                cluster = Cluster(primary, network, tmp_path)
                try:
                    rows.append([mode, round_, *_claim_loops(cluster, replica, mode)])
                finally:
                    cluster.close()
    report(
        f"claim candidates read on the primary or on a replica, {server.vendor}: {MEASURED_JOBS:,} no-op jobs, "
        f"{LOOP_HOSTS} hosts x {LOOPS} claim loops, batches of {BATCH}",
        ["candidates", "round", "jobs/s", "lost/job", "empty claims", "primary CPU ms/1k jobs", "replica CPU ms/1k"],
        rows,
    )


def _claim_loops(cluster: Cluster, replica: PostgresStandby | MariaDBReplica, mode: str) -> list[object]:
    cluster.enqueue("tests.testapp.tasks.noop", MEASURED_JOBS)
    wait_until(replica.caught_up, timeout=120, why=replica.log_text)
    assert cluster.server.process is not None
    assert replica.process is not None
    servers = (cluster.server.process.pid, replica.process.pid)
    before = [cpu_seconds(pid) for pid in servers]
    env = cluster.env(from_host=True, **replica.replica_env(cluster.name, from_host=True))
    loops = [
        subprocess.Popen(
            [*cluster.network.in_namespace(host), sys.executable, "-m", "tests.hosts.claim_loop", mode, str(BATCH)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for host in cluster.network.hosts[:LOOP_HOSTS]
        for _ in range(LOOPS)
    ]
    outputs = []
    for loop in loops:
        out, err = loop.communicate(timeout=600)
        assert loop.returncode == 0, err
        outputs.append(json.loads(out))
    time.sleep(1)  # the backends of the loops' connections exit, and are reaped
    primary_cpu, replica_cpu = (cpu_seconds(pid) - used for pid, used in zip(servers, before, strict=True))
    rate = first_try_rate(cluster)
    lost, empty = (sum(output[key] for output in outputs) for key in ("lost", "empty"))
    assert sum(output["claimed"] for output in outputs) == MEASURED_JOBS
    per_thousand = 1000 * 1000 / MEASURED_JOBS
    return [
        f"{rate:,.0f}", f"{lost / MEASURED_JOBS:.2f}", empty,
        f"{primary_cpu * per_thousand:.0f}", f"{replica_cpu * per_thousand:.0f}",
    ]  # fmt: skip
