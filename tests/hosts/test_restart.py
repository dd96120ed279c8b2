"""The database server restarted in the middle of a drain by two hosts: every host
reconnects, and no job is lost, finished twice or left RUNNING."""

from __future__ import annotations

import time

from tests.hosts.conftest import Cluster
from tests.support.workers import wait_until

JOBS = 3000


def test_a_restart_mid_drain_loses_nothing(cluster: Cluster) -> None:
    cluster.enqueue("tests.testapp.tasks.sleep", JOBS, "[0.002]")
    hosts = cluster.network.hosts[:2]
    started = [cluster.start_workers(host, "--burst", "--processes", "2") for host in hosts]

    def finished() -> int:
        [(count,)] = cluster.query("SELECT COUNT(*) FROM django_sqlqueue_job WHERE status = 'SUCCESSFUL'")
        return int(count)

    wait_until(lambda: finished() >= JOBS // 4, timeout=120, why=started[0].text)
    cluster.server.restart()
    deadline = time.monotonic() + 300
    for workers in started:
        assert workers.wait(max(1.0, deadline - time.monotonic())) == 0, workers.text()
    rows = cluster.query("SELECT status, COUNT(*) FROM django_sqlqueue_job GROUP BY status")
    assert dict(rows) == {"SUCCESSFUL": JOBS}, rows
    # The workers met the restart: in a claim (they reconnect, saying so), or in a finish,
    # whose lost connection is closed and its outcomes written again one job at a time.
    met = ("reconnecting", "The database refused the outcomes")
    assert any(sign in workers.text() for workers in started for sign in met), started[0].text()
