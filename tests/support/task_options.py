"""Where Django's ``@task`` passes a backend's own options on (``@task(atomic=True)``):
Django 6.1 and the backport for 5.2 do, Django 6.0 takes only its own arguments."""

from __future__ import annotations

import django
import pytest

needs_task_options = pytest.mark.skipif(
    django.VERSION[:2] == (6, 0), reason="Django 6.0's @task passes no options to the backend"
)
