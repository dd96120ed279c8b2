"""The ``sqlqueue`` fixture for pytest-django users. Installed with django-sqlqueue as a
pytest plugin (``-p no:django_sqlqueue`` turns it off); it imports nothing of Django's
until a test asks for the fixture, so it costs other projects' test runs nothing."""

from __future__ import annotations

from types import ModuleType

import pytest


@pytest.fixture
def sqlqueue(db: None) -> ModuleType:
    """:mod:`django_sqlqueue.testing`, with the test's database access (pytest-django's
    ``db``): ``sqlqueue.assert_enqueued(send_welcome, args=[user.pk])``,
    ``sqlqueue.run_jobs()``, ``sqlqueue.perform(task, ...)``."""
    from django_sqlqueue import testing

    return testing
