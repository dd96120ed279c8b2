"""The metrics served by the web process."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from django_sqlqueue.metrics import views
from tests.support.admin_helpers import make_job

pytestmark = pytest.mark.django_db


def test_the_gauges_in_prometheus_text_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    make_job(queue="mail")
    response = views.metrics(RequestFactory().get("/metrics"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    lines = response.content.decode().splitlines()
    assert 'sqlqueue_jobs{queue="mail",status="READY"} 1.0' in lines
    assert "sqlqueue_workers_alive 0.0" in lines
    assert "# TYPE sqlqueue_queue_lag_seconds gauge" in lines


def test_without_prometheus_client_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "client_installed", lambda: False)
    with pytest.raises(ImproperlyConfigured, match=r'pip install "django-sqlqueue\[metrics\]"'):
        views.metrics(RequestFactory().get("/metrics"))
