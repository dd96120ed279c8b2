"""The example project's settings: the test suite's (its databases, the
queue's apps, its short clocks) with the ``shop`` app instead of the tests'
apps, and the blocks the how-to guides include between ``# [name]`` markers,
which the system checks must pass."""

from __future__ import annotations

import datetime

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES, INSTALLED_APPS

INSTALLED_APPS = [
    *(app for app in INSTALLED_APPS if not app.startswith("tests.")),
    "shop",
]
ROOT_URLCONF = "mysite.urls"
# Django 6.1 asks for mailers to be named (the testing guide's welcome mail).
MAILERS = {
    "default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend"}
}

# A test database of its own, beside that of the suite that runs its tests.
_test = DATABASES["default"].setdefault("TEST", {})
_test["NAME"] = (
    _test.get("NAME") or f"test_{DATABASES['default']['NAME']}"
) + "_howto"

# [tasks-backend]
TASKS = {
    "default": {
        "BACKEND": "django_sqlqueue.backends.SQLQueueBackend",
        "QUEUES": ["default", "reports"],  # Django's default: ["default"]
        # Defaults for every task; both optional.
        "OPTIONS": {"max_attempts": 5, "timeout": 300},
    }
}
# [/tasks-backend]

# [retention]
SQLQUEUE_RETENTION = {
    "SUCCESSFUL": datetime.timedelta(hours=6),  # 0 deletes a job as it succeeds
    "CANCELLED": datetime.timedelta(days=7),  # seconds or a timedelta
    "FAILED": None,  # keep for ever
}
# [/retention]

# [rate-limits]
SQLQUEUE_RATE_LIMITS = {
    "payments": "25/s",
    "reports": "100/m burst 10",
    "exports": "1000/h",
}
# [/rate-limits]

# [middleware]
SQLQUEUE_MIDDLEWARE = [
    "shop.middleware.timed",  # the outermost
    "shop.middleware.retry_timeouts_once",
]
# [/middleware]

# [json-logging]
LOGGING = {
    "version": 1,
    "formatters": {"json": {"()": "django_sqlqueue.logs.JsonFormatter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "json"}
    },
    "root": {"handlers": ["console"], "level": "INFO"},
}
# [/json-logging]

# [pgbouncer]
# Behind PgBouncer in transaction pooling mode (Django asks it of any
# transaction pooler):
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
# [/pgbouncer]
