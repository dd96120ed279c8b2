"""The multi-host suite's machines: network namespaces for a database machine and
worker hosts, the suite's own PostgreSQL and MariaDB in the database machine, and
``runworkers`` on each host. Run as root with ``tox -e hosts`` (no pytest-django: the
test process reaches the suite's servers through their Unix sockets, with the drivers
or with subprocesses, and never touches the machine's own servers).

Figures the tests measure are printed at the end of the run, not asserted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.network import DATABASE_ADDRESS, Network
from tests.hosts.servers import MariaDBServer, PostgresServer, Server
from tests.support.workers import FAST_CLOCKS, KEEP_FINISHED, ROOT, Workers

HOSTS = 4

#: The figures of the run, printed in the terminal summary: (title, header, rows).
REPORTS: list[tuple[str, list[str], list[list[Any]]]] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A measurement runs for minutes by design: the suite's timeout is for the
    correctness tests."""
    for item in items:
        if item.get_closest_marker("measure"):
            item.add_marker(pytest.mark.timeout(0))


def report(title: str, header: list[str], rows: list[list[Any]]) -> None:
    REPORTS.append((title, header, rows))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for title, header, rows in REPORTS:
        terminalreporter.section(title)
        widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
        for row in [header, *rows]:
            terminalreporter.write_line(
                "  ".join(str(cell).rjust(width) for cell, width in zip(row, widths, strict=True))
            )


@pytest.fixture(scope="session")
def network() -> Iterator[Network]:
    if os.geteuid() != 0:
        pytest.fail("The multi-host suite runs as root: it makes network namespaces and starts servers as their users.")
    made = Network(HOSTS)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="session", params=["postgres", "mysql"])
def server(request: pytest.FixtureRequest, network: Network) -> Iterator[Server]:
    # Not pytest's tmp_path: its folders are root's alone, and the servers run as their users.
    root = Path(tempfile.mkdtemp(prefix=f"sqlqueue-hosts-{request.param}-"))
    root.chmod(0o755)
    started: Server | None = None
    try:
        started = PostgresServer(network, root) if request.param == "postgres" else MariaDBServer(network, root)
        yield started
    finally:
        if started is not None:
            started.stop()
        shutil.rmtree(root, ignore_errors=True)


class Cluster:
    """One test's database on the suite's server, and the ``runworkers`` it starts on hosts."""

    def __init__(self, server: Server, network: Network, logs: Path) -> None:
        self.server = server
        self.network = network
        self.logs = logs
        self.name = f"hosts_{uuid.uuid4().hex[:8]}"
        self.started: list[Workers] = []
        self.proxies: list[subprocess.Popen[bytes]] = []
        server.create_database(self.name)
        self.manage("migrate", "-v", "0")

    def env(self, *, from_host: bool, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            **self.server.env(self.name, from_host=from_host),
            **extra,
        }

    def manage(self, *args: str, **env: str) -> str:
        """``manage.py`` in the test process's namespace, over the server's socket."""
        return self.run_module("manage", *args, **env)

    def enqueue(self, task: str, count: int, args: str = "[]", **env: str) -> None:
        self.run_module("tests.hosts.enqueue", task, str(count), args, **env)

    def run_module(self, module: str, *args: str, **env: str) -> str:
        """``python -m MODULE ARGS`` in the test process's namespace; its output."""
        result = subprocess.run(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            env=self.env(from_host=False, **env),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def start_workers(self, host: str, *args: str, **env: str) -> Workers:
        """``runworkers ARGS`` on ``host``, named after it, reaching the server over the network."""
        workers = Workers(
            ["--name", host.rsplit("-", 1)[1], *args],
            self.env(from_host=True, **{**FAST_CLOCKS, **KEEP_FINISHED, **env}),
            sys.executable,
            self.logs / f"runworkers-{len(self.started)}-{host}.log",
            prefix=tuple(self.network.in_namespace(host)),
        )
        self.started.append(workers)
        return workers

    def delayed(self, host: str, milliseconds: float) -> dict[str, str]:
        """Start a proxy on ``host`` that adds ``milliseconds`` to every round trip to the
        server (``tests.hosts.delay_proxy``); the variables that send workers through it."""
        port = str(20000 + len(self.proxies))
        target = [DATABASE_ADDRESS, str(self.server.port), str(milliseconds)]
        proxy = subprocess.Popen(
            [*self.network.in_namespace(host), sys.executable, "-m", "tests.hosts.delay_proxy", port, *target],
            cwd=ROOT,
            stdout=subprocess.PIPE,
        )
        self.proxies.append(proxy)
        assert proxy.stdout is not None
        assert proxy.stdout.readline() == b"listening\n"
        return {"DB_HOST": "127.0.0.1", "DB_PORT": port}

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self.server.execute(sql, self.name)

    def close(self) -> None:
        for workers in self.started:
            workers.kill()
            workers.output.close()
        for proxy in self.proxies:
            proxy.kill()
            proxy.wait()
            assert proxy.stdout is not None
            proxy.stdout.close()


@pytest.fixture
def cluster(server: Server, network: Network, tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(server, network, tmp_path)
    try:
        yield made
    finally:
        made.close()
        for host in network.hosts:
            network.mend(host)
