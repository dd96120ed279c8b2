"""``contrib/__init__.py``: a setting that names an integration whose SDK is missing is
its system check's error, naming the extra to install, not an ImportError as the
worker starts."""

from __future__ import annotations

import sys

import pytest
from django.test import override_settings

from django_sqlqueue import checks


@pytest.mark.parametrize(
    ("setting", "path", "sdk", "extra"),
    [
        ("SQLQUEUE_MIDDLEWARE", "django_sqlqueue.contrib.otel.middleware", "opentelemetry", "otel"),
        ("SQLQUEUE_ENQUEUE_HOOKS", "django_sqlqueue.contrib.otel.propagate", "opentelemetry", "otel"),
        ("SQLQUEUE_MIDDLEWARE", "django_sqlqueue.contrib.sentry.middleware", "sentry_sdk", "sentry"),
    ],
)
def test_a_missing_sdk_is_the_settings_check_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, setting: str, path: str, sdk: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, sdk, None)  # import fails, as when it is not installed
    monkeypatch.delitem(sys.modules, path.rsplit(".", 1)[0], raising=False)
    with override_settings(**{setting: [path]}):
        (error,) = checks.check_settings()
    assert error.id == {"SQLQUEUE_MIDDLEWARE": "sqlqueue.E039", "SQLQUEUE_ENQUEUE_HOOKS": "sqlqueue.E040"}[setting]
    assert error.msg.startswith(f"{setting}: cannot import {path!r}: ImproperlyConfigured: ")
    assert error.msg.endswith(f'pip install "django-sqlqueue[{extra}]".')
