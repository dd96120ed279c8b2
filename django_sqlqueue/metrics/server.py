"""``runworkers --metrics-port``: the supervisor serves the metrics over HTTP from a
thread, with the worker processes' counters in a multiprocess directory of the run's
own unless ``PROMETHEUS_MULTIPROC_DIR`` names one."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIServer

from django.db import connections
from prometheus_client import make_wsgi_app, start_wsgi_server
from prometheus_client.multiprocess import mark_process_dead

from django_sqlqueue.metrics.collector import scrape_registry

logger = logging.getLogger(__name__)

#: Where the metrics are served by default: this machine only. A scraper on another
#: machine (or outside the container) needs ``--metrics-address 0.0.0.0``.
DEFAULT_ADDRESS = "127.0.0.1"


@contextlib.contextmanager
def serving(address: str, port: int) -> Iterator[str]:
    """Serve the metrics on ``address:port`` while the block runs; yields the multiprocess
    directory the worker processes must write to (set in ``os.environ``, which they
    inherit). A directory made here is removed afterwards. Raises ``OSError`` when the
    address cannot be bound (a port in use)."""
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    path = given or tempfile.mkdtemp(prefix="sqlqueue-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    registry = scrape_registry()
    try:
        server, thread = start_wsgi_server(port, address, registry=registry)
    except BaseException:
        _restore(given, path)
        raise
    # Not the client's app alone: each request runs in a thread of its own, whose
    # database connection must be closed when it ends.
    server.set_app(_closing_connections(make_wsgi_app(registry)))
    logger.info("Serving metrics on http://%s:%d/metrics", address, port)
    try:
        yield path
    finally:
        _stop(server, thread)
        _restore(given, path)


def process_dead(pid: int) -> None:
    """Tell the client a worker process ended: its live gauges' files go."""
    if path := os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        mark_process_dead(pid, path)  # type: ignore[no-untyped-call]


def _closing_connections(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    def closing(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            return app(environ, start_response)
        finally:
            connections.close_all()

    return closing


def _stop(server: WSGIServer, thread: threading.Thread) -> None:
    server.shutdown()
    server.server_close()
    thread.join()


def _restore(given: str | None, path: str) -> None:
    if given is None:
        os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
        shutil.rmtree(path, ignore_errors=True)
