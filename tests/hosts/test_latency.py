"""What round-trip latency between the hosts and the database costs a drain, by batch
size: 0, 1, 5 and 20 ms added by a proxy on the host (``delay_proxy``; the runs without
latency go through it too), batches of 1, 10 and 100. Reported;
asserted only for what batching is for: at 5 ms, batches of 100 keep the drain within
``FACTOR`` of the drain without latency."""

from __future__ import annotations

import pytest

from tests.hosts.conftest import Cluster, report
from tests.hosts.figures import drain

DELAYS = [0, 1, 5, 20]
BATCHES = [1, 10, 100]
#: Jobs per run, by batch size: enough for batches to grow to their size and stay there
#: (a worker starts with one job per thread and doubles), few enough for a run at 20 ms
#: with batches of 1, a handful of round trips per job, to take seconds.
pytestmark = pytest.mark.measure

JOBS = {1: 300, 10: 1000, 100: 4000}
#: How much slower, at most, the 5 ms drain with batches of 100 may be than the 0 ms one.
FACTOR = 4.0
RATES: dict[str, dict[tuple[int, int], float]] = {}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("delay", DELAYS)
def test_drain_by_latency_and_batch_size(cluster: Cluster, delay: int, batch: int) -> None:
    host = cluster.network.hosts[0]
    cluster.enqueue("tests.testapp.tasks.noop", JOBS[batch])
    rate, _ = drain(cluster, [host], "--batch-size", str(batch), **cluster.delayed(host, delay))
    vendor = cluster.server.vendor
    rates = RATES.setdefault(vendor, {})
    rates[delay, batch] = rate
    if len(rates) == len(DELAYS) * len(BATCHES):
        report(
            f"latency on {vendor}: jobs/s, 1 host x 2 processes, by added round trip (rows) and batch size",
            ["round trip", *(f"batch {size}" for size in BATCHES)],
            [[f"+{ms} ms", *(f"{rates[ms, size]:,.0f}" for size in BATCHES)] for ms in DELAYS],
        )
    if (delay, batch) == (5, 100):
        assert rate * FACTOR >= rates[0, 100], (rate, rates[0, 100])
