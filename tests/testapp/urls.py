"""The tests' own URLs: ``settings.ROOT_URLCONF = "tests.testapp.urls"`` in a test."""

from __future__ import annotations

from django.urls import path

from tests.testapp.views import sign_up

urlpatterns = [path("sign-up/", sign_up)]
