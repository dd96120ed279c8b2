"""The SQLite settings the troubleshooting page shows: the test project's
(``shop/tests/test_settings.py`` checks that they agree)."""

from __future__ import annotations

from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# [sqlite]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "db.sqlite3",
        "OPTIONS": {
            # A claim takes the write lock before it reads: sqlqueue.E010.
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            # WAL: a commit does not block readers (sqlqueue.W001).
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
            ),
        },
    }
}
# [/sqlite]
