from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo app: tasks and pages that show django-sqlqueue at work."""

    name = "testproject.demo"
    label = "demo"
