"""Prometheus metrics, with the optional ``prometheus-client``
(``pip install "django-sqlqueue[metrics]"``).

Two kinds: gauges read from the database at each scrape (:mod:`.collector`), the same
whichever process serves them; and counters and a histogram of finished jobs that the
worker processes record from the job signals (:mod:`.recorder`) in the client's
multiprocess mode. ``runworkers --metrics-port`` serves both from its supervisor
(:mod:`.server`); :func:`.views.metrics` serves them from the web process.

It may import the figures (``stats``), the models, ``db/`` and the root's settings and
signals; never ``management/`` or ``runner/``."""

from __future__ import annotations

import importlib.util

INSTALL_HINT = 'install prometheus-client: pip install "django-sqlqueue[metrics]"'


def client_installed() -> bool:
    """Whether ``prometheus_client`` can be imported (without importing it)."""
    return importlib.util.find_spec("prometheus_client") is not None
