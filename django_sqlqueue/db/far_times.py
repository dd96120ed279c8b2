"""Times a database holds past the last one Python can: PostgreSQL's ``timestamp``
columns go on to the year 294276, and an old version could write such a ``run_at`` (an
offset, a long delay), which the driver then fails to read, failing a whole page with
it. MariaDB's and SQLite's columns end with Python's years."""

from __future__ import annotations

import datetime
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import Case, F, Value, When


def readable(field: str, using: str) -> Any:
    """An expression reading ``field`` capped at the last time Python holds, so that a
    row past it is read (as that time) rather than failing; the plain column where the
    database holds no later time."""
    if connections[using].vendor != "postgresql":
        return F(field)
    last = datetime.datetime.max.replace(tzinfo=datetime.timezone.utc) if settings.USE_TZ else datetime.datetime.max
    return Case(When(**{f"{field}__gt": last}, then=Value(last)), default=F(field))
