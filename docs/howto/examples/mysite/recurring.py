"""The recurring jobs the scheduling guide shows (``docs/howto/recurring.md``):
apart from ``mysite.settings``, so that no tick of theirs lands in the other
guides' tests; ``shop/tests/test_recurring.py`` runs the system checks and
``sqlqueue_schedule`` on them."""

from __future__ import annotations

# [recurring]
import datetime

SQLQUEUE_SCHEDULE = {
    # At 03:00 every night, Paris time, in winter and in summer.
    "nightly-report": {
        "task": "shop.tasks.nightly_report",
        "cron": "0 3 * * *",
        "tz": "Europe/Paris",
        "kwargs": {"kind": "daily"},
    },
    # Every 30 seconds: at :00 and :30 of each minute.
    "ping": {"task": "shop.tasks.ping", "every": 30},
    # Every 15 minutes; after an outage, each missed tick is enqueued.
    "sync-stock": {
        "task": "shop.tasks.sync_stock",
        "every": datetime.timedelta(minutes=15),
        "missed": "all",
    },
}
# [/recurring]
