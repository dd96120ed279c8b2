"""The example project's URLs: the sign-up page the testing guide tests, and the
metrics page of the metrics guide."""

from __future__ import annotations

from django.urls import path

from django_sqlqueue.metrics.views import metrics
from shop.views import sign_up

urlpatterns = [
    path("sign-up/", sign_up),
    # [metrics-url]
    path("internal/metrics", metrics),
    # [/metrics-url]
]
