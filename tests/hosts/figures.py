"""Drains measured by the database: jobs per second from the first claim to the last
finish, and the claims' lost candidates read while the workers run (they delete their
rows, counters and all, when they exit)."""

from __future__ import annotations

import time

from tests.hosts.conftest import Cluster

TIMEOUT = 600


def drain(cluster: Cluster, hosts: list[str], *args: str, **env: str) -> tuple[float, int]:
    """Run ``runworkers --burst --processes 2 ARGS`` on each of ``hosts`` until the queue
    is empty; (jobs/s, lost candidates). Fails unless every job succeeded at its first attempt."""
    started = [cluster.start_workers(host, "--burst", "--processes", "2", *args, **env) for host in hosts]
    lost = 0
    deadline = time.monotonic() + TIMEOUT
    while any(workers.process.poll() is None for workers in started):
        assert time.monotonic() < deadline, started[0].text()
        [(counted,)] = cluster.query("SELECT COALESCE(SUM(candidates_lost), 0) FROM django_sqlqueue_worker")
        lost = max(lost, int(counted))
        time.sleep(0.2)
    for workers in started:
        assert workers.wait(10) == 0, workers.text()
    return first_try_rate(cluster), lost


def first_try_rate(cluster: Cluster) -> float:
    """Jobs per second from the first claim to the last finish; fails unless every job
    succeeded at its first attempt."""
    [(total, first_try, seconds)] = cluster.query(_figures(cluster.server.vendor))
    assert total == first_try, f"{total - first_try} of {total} jobs did not succeed at their first attempt"
    return float(total) / float(seconds)


def _figures(vendor: str) -> str:
    seconds = (
        "EXTRACT(EPOCH FROM MAX(finished_at) - MIN(started_at))"
        if vendor == "postgres"
        else "TIMESTAMPDIFF(MICROSECOND, MIN(started_at), MAX(finished_at)) / 1e6"
    )
    return (
        f"SELECT COUNT(*), SUM(CASE WHEN status = 'SUCCESSFUL' AND attempts = 1 THEN 1 ELSE 0 END), {seconds}"
        " FROM django_sqlqueue_job"
    )
