"""A host cut off the network while its jobs run: for longer than the lease, its jobs
are rescued and finished by another host, and its late outcomes write nothing (fencing);
for less, it carries on as if nothing happened. Either way no job is lost or finished twice."""

from __future__ import annotations

import time

from tests.hosts.conftest import Cluster
from tests.support.workers import wait_until

#: Longer than the suite's fast clocks: a short cut must not look like a dead host.
CLOCKS = {"SQLQUEUE_LEASE": "6", "SQLQUEUE_HEARTBEAT_INTERVAL": "0.5"}
JOBS = 4


def start_two_hosts(cluster: Cluster, seconds: float) -> tuple[str, str]:
    """``JOBS`` jobs running on the first host, and a second host idle beside it."""
    cut, other = cluster.network.hosts[:2]
    cluster.enqueue("tests.testapp.tasks.sleep_and_say", JOBS, f"[{seconds}]")
    cluster.start_workers(cut, "--processes", "1", "--threads", str(JOBS), SAY=cut, **CLOCKS)
    wait_until(lambda: running_on(cluster, cut) == JOBS, timeout=60, why=lambda: cluster.started[0].text())
    cluster.start_workers(other, "--processes", "1", "--threads", str(JOBS), SAY=other, **CLOCKS)
    return cut, other


def running_on(cluster: Cluster, host: str) -> int:
    prefix = host.rsplit("-", 1)[1]
    [(count,)] = cluster.query(
        f"SELECT COUNT(*) FROM django_sqlqueue_job WHERE status = 'RUNNING' AND worker LIKE '{prefix}%'"
    )
    return int(count)


def outcomes(cluster: Cluster) -> list[tuple[str, int, str]]:
    rows = cluster.query("SELECT status, attempts, result FROM django_sqlqueue_job ORDER BY id")
    return [(status, attempts, str(result).strip('"')) for status, attempts, result in rows]


def test_cut_off_past_the_lease_its_jobs_are_rescued_and_its_late_outcomes_write_nothing(cluster: Cluster) -> None:
    cut, other = start_two_hosts(cluster, seconds=4)
    cluster.network.cut(cut)
    # The lease runs out, the other host rescues the jobs and runs them to the end.
    wait_until(
        lambda: outcomes(cluster) == [("SUCCESSFUL", 2, other)] * JOBS,
        timeout=90,
        why=lambda: f"{outcomes(cluster)}\n{cluster.started[1].text()}",
    )
    cluster.network.mend(cut)
    # Back, its outcomes (computed while it was cut off) are fenced out, and it carries on.
    wait_until(lambda: "had been taken away" in cluster.started[0].text(), timeout=90, why=cluster.started[0].text)
    assert outcomes(cluster) == [("SUCCESSFUL", 2, other)] * JOBS
    cluster.enqueue("tests.testapp.tasks.sleep_and_say", 40, "[0.2]")
    wait_until(
        lambda: sum(1 for status, _, host in outcomes(cluster)[JOBS:] if (status, host) == ("SUCCESSFUL", cut)),
        timeout=90,
        why=cluster.started[0].text,
    )
    wait_until(lambda: all(status == "SUCCESSFUL" for status, _, _ in outcomes(cluster)), timeout=90)


def test_cut_off_within_the_lease_it_keeps_its_jobs(cluster: Cluster) -> None:
    cut, _ = start_two_hosts(cluster, seconds=4)
    cluster.network.cut(cut)
    time.sleep(1.5)
    cluster.network.mend(cut)
    wait_until(
        lambda: all(status == "SUCCESSFUL" for status, _, _ in outcomes(cluster)),
        timeout=90,
        why=lambda: f"{outcomes(cluster)}\n{cluster.started[0].text()}",
    )
    assert outcomes(cluster) == [("SUCCESSFUL", 1, cut)] * JOBS
