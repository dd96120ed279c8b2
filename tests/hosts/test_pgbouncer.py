"""Workers on two hosts through PgBouncer in transaction pooling mode: claims, finishes
and heartbeats work through it; ``LISTEN`` hears nothing there, which each worker finds
out with its probe, says once, and then polls (jobs enqueued after that still run)."""

from __future__ import annotations

import pytest

from tests.hosts.conftest import Cluster
from tests.hosts.servers import PgBouncer, PostgresServer
from tests.support.workers import wait_until

JOBS = 300
LATER = 20
DEAF = "hears no notifications"


def test_workers_run_through_pgbouncer_and_poll_when_listen_hears_nothing(cluster: Cluster) -> None:
    if not isinstance(cluster.server, PostgresServer):
        pytest.skip("PgBouncer pools PostgreSQL connections")
    bouncer = PgBouncer(cluster.network, cluster.server)
    try:
        cluster.enqueue("tests.testapp.tasks.sleep", JOBS, "[0.002]")
        through = {"DB_PORT": str(PgBouncer.port), "DB_PGBOUNCER": "1"}
        hosts = cluster.network.hosts[:2]
        started = [cluster.start_workers(host, "--processes", "1", **through) for host in hosts]
        logs = lambda: "\n".join(workers.text() for workers in started) + bouncer.log_text()  # noqa: E731

        def succeeded() -> int:
            [(count,)] = cluster.query("SELECT COUNT(*) FROM django_sqlqueue_job WHERE status = 'SUCCESSFUL'")
            return int(count)

        def beats() -> list[object]:
            return [row[0] for row in cluster.query("SELECT heartbeat_at FROM django_sqlqueue_worker ORDER BY name")]

        wait_until(lambda: succeeded() == JOBS, timeout=120, why=logs)
        # Each worker finds out that LISTEN hears nothing once its probe is overdue.
        wait_until(lambda: all(DEAF in workers.text() for workers in started), timeout=30, why=logs)
        first = beats()
        assert len(first) == 2
        wait_until(lambda: all(a != b for a, b in zip(first, beats(), strict=True)), timeout=10, why=logs)
        # Polling, they still take jobs enqueued after that.
        cluster.enqueue("tests.testapp.tasks.sleep", LATER, "[0.002]")
        wait_until(lambda: succeeded() == JOBS + LATER, timeout=30, why=logs)
        for workers in started:
            assert workers.stop() == 0, workers.text()
            assert workers.text().count(DEAF) == 1, workers.text()
        rows = cluster.query("SELECT status, COUNT(*) FROM django_sqlqueue_job GROUP BY status")
        assert dict(rows) == {"SUCCESSFUL": JOBS + LATER}, rows
    finally:
        bouncer.stop()
