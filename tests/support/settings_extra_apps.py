"""The tests' settings with more installed apps, named in ``SQLQUEUE_TEST_EXTRA_APPS``
(comma-separated): for runworkers subprocesses that must meet a broken deployment."""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, *filter(None, os.environ.get("SQLQUEUE_TEST_EXTRA_APPS", "").split(","))]
