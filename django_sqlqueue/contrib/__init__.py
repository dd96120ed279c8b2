"""Integrations with other projects' SDKs, each an optional extra: OpenTelemetry tracing
(:mod:`.otel`, ``django-sqlqueue[otel]``) and Sentry error reporting (:mod:`.sentry`,
``django-sqlqueue[sentry]``). Each is a middleware of ``SQLQUEUE_MIDDLEWARE`` (and, for
tracing, an enqueue hook of ``SQLQUEUE_ENQUEUE_HOOKS``) named by its dotted path.

A runtime, beside ``runner/``: it may import the runner's types, the models, ``db/`` and
the rules. A module whose SDK is not installed raises ``ImproperlyConfigured`` naming
the extra as it is imported, so a setting that names it is the system check of that
setting (``sqlqueue.E039``, ``sqlqueue.E040``) and ``runworkers`` refuses to start,
saying what to install."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured


def missing(extra: str, sdk: str, error: ImportError) -> ImproperlyConfigured:
    """The error a module of this package raises when ``sdk`` (its ``extra``'s) cannot be
    imported."""
    return ImproperlyConfigured(
        f"django_sqlqueue.contrib.{extra} needs {sdk}, which cannot be imported ({error}): "
        f'pip install "django-sqlqueue[{extra}]"'
    )
