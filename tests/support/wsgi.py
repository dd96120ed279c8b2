"""The WSGI application of the tests' settings, served by the real servers that the
embedded workers' tests start (``tests.support.servers``)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
application = get_wsgi_application()
