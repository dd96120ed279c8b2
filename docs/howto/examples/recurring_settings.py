"""The settings of docs/howto/recurring.md, from ``import datetime`` on; a test loads them
and runs the system checks on them."""

from __future__ import annotations

import datetime

SQLQUEUE_SCHEDULE = {
    # At 03:00 every night, Paris time, in summer and in winter.
    "nightly-report": {
        "task": "shop.tasks.build_report",
        "cron": "0 3 * * *",
        "tz": "Europe/Paris",
        "kwargs": {"kind": "daily"},
        "queue": "reports",
    },
    # Every 30 seconds: at :00 and :30 of each minute, wherever the supervisor runs.
    "ping": {"task": "shop.tasks.ping", "every": 30},
    # Every 15 minutes; after an outage, every tick it missed is enqueued.
    "sync-stock": {"task": "shop.tasks.sync_stock", "every": datetime.timedelta(minutes=15), "missed": "all"},
}
