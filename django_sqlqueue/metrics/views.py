"""The metrics, served by the web process: put :func:`metrics` in your ``urls.py``,
behind whatever protects your internal pages (see the documentation's how-to guide "Metrics and logs")."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse

from django_sqlqueue.metrics import INSTALL_HINT, client_installed


def metrics(request: HttpRequest) -> HttpResponse:
    """The queue's gauges, read from the database now, in Prometheus's text format; with
    ``PROMETHEUS_MULTIPROC_DIR`` set, the counters every process wrote there too."""
    if not client_installed():
        raise ImproperlyConfigured(f"django_sqlqueue.metrics.views.metrics needs prometheus-client: {INSTALL_HINT}.")
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    from django_sqlqueue.metrics.collector import scrape_registry

    return HttpResponse(generate_latest(scrape_registry()), content_type=CONTENT_TYPE_LATEST)
